"""Receipt handles: the broker can tell its own from anything a client made up or edited."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from halfmq.broker.delivery.receipt_handle import ReceiptHandle, load_or_create_key
from halfmq.broker.errors import InvalidReceiptHandle

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


def test_the_key_is_created_once_and_kept_across_restarts(tmp_path: Path) -> None:
    key = load_or_create_key(tmp_path / "receipt-key.json")
    assert len(key) == 32
    assert load_or_create_key(tmp_path / "receipt-key.json") == key
    assert load_or_create_key(tmp_path / "other.json") != key
