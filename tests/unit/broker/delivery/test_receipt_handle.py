"""Receipt handles: the broker can tell its own from anything a client made up or edited."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from halfmq.broker.delivery.receipt_handle import ReceiptHandle, load_or_create_key
from halfmq.errors import InvalidReceiptHandle

KEY = b"k" * 32
HANDLE = ReceiptHandle("g", "%RETRY%g", 1, 42, 7, "0a1b2c3d")


def test_a_handle_decodes_to_what_was_encoded() -> None:
    assert ReceiptHandle.decode(HANDLE.encode(KEY), KEY) == HANDLE


def test_every_single_byte_edit_of_a_handle_is_refused() -> None:
    blob = bytearray(base64.urlsafe_b64decode(HANDLE.encode(KEY) + "=="))
    for i in range(len(blob)):
        edited = bytearray(blob)
        edited[i] ^= 0x01
        with pytest.raises(InvalidReceiptHandle):
            ReceiptHandle.decode(base64.urlsafe_b64encode(bytes(edited)).decode().rstrip("="), KEY)


@pytest.mark.parametrize("text", ["", "x", "Zm9v", "not-base64!!", "\udc00", "ünï", "A" * 5000])
def test_text_that_is_no_handle_is_refused(text: str) -> None:
    with pytest.raises(InvalidReceiptHandle):
        ReceiptHandle.decode(text, KEY)


def test_a_handle_signed_with_another_key_is_refused() -> None:
    with pytest.raises(InvalidReceiptHandle):
        ReceiptHandle.decode(HANDLE.encode(b"x" * 32), KEY)


def test_a_cut_or_lengthened_handle_is_refused() -> None:
    text = HANDLE.encode(KEY)
    for bad in (text[:-1], text[:-8], text[: len(text) // 2], text + "A", text + "AAAA"):
        with pytest.raises(InvalidReceiptHandle):
            ReceiptHandle.decode(bad, KEY)


@pytest.mark.parametrize("handle", [
    HANDLE,
    ReceiptHandle("g1", "ORDER_TOPIC", 0, 0, 0, "e"),
    ReceiptHandle("credit group", "%RETRY%credit group", 7, 2**62, 2**31, "ff00"),
    ReceiptHandle("grüße", "tópico", 15, 123456789, 99, "0a1b2c3d4e5f"),
    ReceiptHandle("gg", "TT", 12, 3456, 78901, "abcd1"),
    ReceiptHandle("ggg", "TTT", 12, 3456, 78901, "abcd12"),
])
def test_handles_of_every_length_and_alphabet_round_trip(handle: ReceiptHandle) -> None:
    assert ReceiptHandle.decode(handle.encode(KEY), KEY) == handle


def test_handles_of_every_base64_padding_round_trip() -> None:
    paddings = set()
    for n in range(1, 7):
        handle = ReceiptHandle("g" * n, "T", 1, 42, 7, "e")
        text = handle.encode(KEY)
        paddings.add(-len(text) % 4)
        assert ReceiptHandle.decode(text, KEY) == handle
    assert paddings == {0, 1, 2}


def test_handles_ending_in_any_character_round_trip() -> None:
    texts = {nonce: ReceiptHandle("g", "T", 1, 42, nonce, "e").encode(KEY) for nonce in range(400)}
    assert {text[-1] for text in texts.values()} >= set("AXYZaz09-_")
    for nonce, text in texts.items():
        assert ReceiptHandle.decode(text, KEY).nonce == nonce


def test_a_handle_is_url_safe_text_without_padding() -> None:
    for n in range(1, 4):
        text = ReceiptHandle("g" * n, "T/x+y", 1, 42, 7, "e").encode(KEY)
        assert set(text) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def test_a_refused_handle_is_quoted_in_the_error_cut_short() -> None:
    text = "A" * 100
    with pytest.raises(InvalidReceiptHandle) as info:
        ReceiptHandle.decode(text, KEY)
    assert repr("A" * 64) in str(info.value)
    assert info.value.to_problem()["code"] == InvalidReceiptHandle.code


def test_the_key_is_created_once_and_kept_across_restarts(tmp_path: Path) -> None:
    key = load_or_create_key(tmp_path / "receipt-key.json")
    assert len(key) == 32
    assert load_or_create_key(tmp_path / "receipt-key.json") == key
    assert load_or_create_key(tmp_path / "other.json") != key
