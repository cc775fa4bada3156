"""The commit-log record: what is written is read back field for field, and damage is refused and named."""

from __future__ import annotations

import struct

import crc32c
import pytest

from halfmq.broker.store.record import (
    FLAG_BODY_BINARY,
    FLAG_GROUP_MORE,
    HEADER_FIELDS,
    HEADER_SIZE,
    MAX_BIT_SEARCH,
    MAX_RECORD_SIZE,
    RecordError,
    claims_offset,
    damaged_field,
    decode,
    decode_properties,
    encode,
    encode_properties,
    peek_size,
    record_size,
    tag_hash,
)

PROPS = {"UNIQ_KEY": "key-0001", "KEYS": "order 42", "TAGS": "paid", "EMPTY": ""}


def make(topic: str = "ORDER_TOPIC", props: dict[str, str] | None = None, body: bytes = b"body bytes", *,
         queue_id: int = 3, queue_offset: int = 11, offset: int = 4096, born: int = 1_700_000_000_001,
         stored: int = 1_700_000_000_002, flags: int = 0) -> bytes:
    return encode(topic.encode(), queue_id, encode_properties(PROPS if props is None else props), body,
                  queue_offset=queue_offset, commit_log_offset=offset, born_timestamp=born,
                  store_timestamp=stored, flags=flags)


def flip(raw: bytes, index: int, bit: int = 0) -> bytes:
    out = bytearray(raw)
    out[index] ^= 1 << bit
    return bytes(out)


def with_size(raw: bytes, size: int) -> bytes:
    return struct.pack("<I", size) + raw[4:]


# --- writing and reading back ------------------------------------------------------------------

def test_a_record_reads_back_every_field_it_was_written_with() -> None:
    raw = make(flags=FLAG_BODY_BINARY)
    msg = decode(raw)
    assert (msg.topic, msg.queue_id, msg.queue_offset, msg.commit_log_offset) == ("ORDER_TOPIC", 3, 11, 4096)
    assert (msg.born_timestamp, msg.store_timestamp) == (1_700_000_000_001, 1_700_000_000_002)
    assert msg.properties == PROPS
    assert msg.body == b"body bytes"
    assert msg.flags == FLAG_BODY_BINARY
    assert msg.size == len(raw)


def test_a_message_with_several_properties_keeps_all_of_them_in_order() -> None:
    assert list(decode_properties(encode_properties(PROPS)).items()) == list(PROPS.items())
    assert list(decode(make(props=PROPS)).properties.items()) == list(PROPS.items())


@pytest.mark.parametrize("props", [{}, {"UNIQ_KEY": "k"}, {"a": "1", "b": "2"}, {"a": "1", "b": "2", "c": "3"}])
def test_properties_of_any_count_round_trip(props: dict[str, str]) -> None:
    assert decode_properties(encode_properties(props)) == props
    assert decode(make(props=props)).properties == props


def test_properties_are_stored_in_rocketmqs_encoding() -> None:
    assert encode_properties({}) == b""
    assert encode_properties({"UNIQ_KEY": "k1"}) == b"UNIQ_KEY\x01k1\x02"
    assert encode_properties({"a": "1", "b": "ü"}) == "a\x011\x02b\x01ü\x02".encode()


def test_property_values_may_hold_spaces_and_unicode() -> None:
    props = {"KEYS": "order 42 for user 7", "note": "grüße\tdone"}
    assert decode_properties(encode_properties(props)) == props


def test_a_record_without_properties_or_body_is_a_bare_header_and_topic() -> None:
    raw = make(props={}, body=b"")
    assert len(raw) == HEADER_SIZE + len("ORDER_TOPIC")
    msg = decode(raw)
    assert (msg.properties, msg.body) == ({}, b"")


def test_a_record_of_nothing_but_its_header_decodes() -> None:
    raw = make(topic="", props={}, body=b"")
    assert len(raw) == HEADER_SIZE
    assert decode(raw).topic == ""


def test_record_size_is_the_length_of_the_encoded_record() -> None:
    topic, props, body = b"TOPIC", encode_properties(PROPS), b"0123456789abcdef" * 3
    raw = encode(topic, 0, props, body, queue_offset=0, commit_log_offset=0, born_timestamp=0, store_timestamp=0, flags=0)
    assert record_size(topic, props, body) == len(raw) == HEADER_SIZE + 5 + len(props) + 48


def test_a_record_decodes_at_its_position_in_a_longer_buffer() -> None:
    first, second = make(body=b"first"), make(topic="T2", body=b"second", queue_offset=12, offset=9000)
    buf = first + second + b"\0" * 7
    msg = decode(buf, len(first))
    assert (msg.topic, msg.queue_offset, msg.commit_log_offset, msg.body) == ("T2", 12, 9000, b"second")
    assert decode(memoryview(buf), 0).body == b"first"


@pytest.mark.parametrize(("flags", "binary", "group_more"), [
    (0, False, False),
    (FLAG_BODY_BINARY, True, False),
    (FLAG_GROUP_MORE, False, True),
    (FLAG_BODY_BINARY | FLAG_GROUP_MORE, True, True),
])
def test_the_binary_body_and_group_flags_are_kept_apart(flags: int, binary: bool, group_more: bool) -> None:
    msg = decode(make(flags=flags))
    assert (msg.binary, msg.group_more) == (binary, group_more)


def test_the_flag_bits_have_their_on_disk_values() -> None:
    assert (FLAG_GROUP_MORE, FLAG_BODY_BINARY) == (1, 2)


def test_a_record_of_the_largest_allowed_size_decodes() -> None:
    raw = make(topic="T", props={}, body=b"\0" * (MAX_RECORD_SIZE - HEADER_SIZE - 1))
    assert len(raw) == MAX_RECORD_SIZE
    assert decode(raw).size == MAX_RECORD_SIZE


# --- the declared size --------------------------------------------------------------------------

def test_peek_size_reads_the_declared_size_at_a_position() -> None:
    raw = make()
    assert peek_size(raw) == len(raw)
    assert peek_size(b"xx" + raw, 2) == len(raw)
    assert peek_size(raw[:4]) == len(raw)


def test_peek_size_is_zero_when_fewer_than_four_bytes_remain() -> None:
    assert peek_size(b"\x10\x00\x00") == 0
    assert peek_size(b"\x10\x00\x00\x00\x10\x00", 3) == 0


def test_a_size_with_its_top_bit_set_reads_as_a_huge_size_never_negative() -> None:
    assert peek_size(b"\xff\xff\xff\xff") == 0xFFFF_FFFF


# --- refusing damage ----------------------------------------------------------------------------

def test_a_buffer_shorter_than_a_header_is_refused() -> None:
    with pytest.raises(RecordError, match="short header"):
        decode(make()[: HEADER_SIZE - 1])


def test_a_cut_record_is_refused_at_any_position_in_the_buffer() -> None:
    raw = make()
    with pytest.raises(RecordError, match="short header"):
        decode(b"pad" + raw[: HEADER_SIZE - 1], 3)
    with pytest.raises(RecordError, match="runs past the end"):
        decode(b"pad" + raw[:-1], 3, verify=False)


def test_a_wrong_magic_byte_is_refused() -> None:
    with pytest.raises(RecordError, match="magic"):
        decode(flip(make(), HEADER_FIELDS["magic"]), verify=False)


def test_a_size_too_small_for_its_own_topic_and_properties_is_refused_even_unverified() -> None:
    raw = make(body=b"")
    for size in (len(raw) - 1, HEADER_SIZE + len("ORDER_TOPIC"), HEADER_SIZE):
        with pytest.raises(RecordError, match="bad size"):
            decode(with_size(raw, size), verify=False)


def test_a_size_past_the_largest_record_is_refused() -> None:
    with pytest.raises(RecordError, match="bad size"):
        decode(with_size(make(), MAX_RECORD_SIZE + 1), verify=False)


def test_a_record_running_past_the_end_of_the_buffer_is_refused() -> None:
    raw = make()
    with pytest.raises(RecordError, match="runs past the end"):
        decode(raw[:-1])


def test_a_flipped_bit_fails_the_crc_unless_verification_is_off() -> None:
    damaged = flip(make(), len(make()) - 1, 3)
    with pytest.raises(RecordError, match="crc mismatch"):
        decode(damaged)
    assert decode(damaged, verify=False).body != b"body bytes"


# --- resynchronising after damage ---------------------------------------------------------------

def test_a_record_claims_the_offset_it_was_written_at_and_no_other() -> None:
    raw = make(offset=4096)
    assert claims_offset(raw, 0, 4096)
    assert not claims_offset(raw, 0, 4097)
    assert claims_offset(b"pad" + raw, 3, 4096)
    assert not claims_offset(flip(raw, HEADER_FIELDS["magic"]), 0, 4096)


def test_claims_offset_needs_a_whole_header() -> None:
    header_only = make(topic="", props={}, body=b"", offset=7)
    assert claims_offset(header_only, 0, 7)
    assert not claims_offset(header_only[:-1], 0, 7)
    assert not claims_offset(b"pad" + header_only[:-1], 3, 7)


# --- naming the damaged field -------------------------------------------------------------------

SMALL = make(topic="TOPIC", props={"K": "value"}, body=b"the body")
TOPIC_AT = HEADER_SIZE
PROPS_AT = HEADER_SIZE + len("TOPIC")
BODY_AT = PROPS_AT + len(encode_properties({"K": "value"}))


@pytest.mark.parametrize(("index", "bit", "field"), [
    (HEADER_FIELDS["flags"], 0, "flags"),
    (HEADER_FIELDS["queue_id"] + 1, 6, "queue_id"),
    (HEADER_FIELDS["queue_offset"], 3, "queue_offset"),
    (HEADER_FIELDS["commit_log_offset"] + 2, 1, "commit_log_offset"),
    (HEADER_FIELDS["born_timestamp"] + 7, 7, "born_timestamp"),
    (HEADER_FIELDS["store_timestamp"], 0, "store_timestamp"),
    (HEADER_FIELDS["topic_len"], 4, "topic_len"),
    (HEADER_FIELDS["props_len"] + 3, 2, "props_len"),
    (TOPIC_AT, 5, "topic"),
    (PROPS_AT - 1, 1, "topic"),
    (PROPS_AT, 0, "properties"),
    (BODY_AT - 1, 7, "properties"),
    (BODY_AT, 2, "body"),
    (len(SMALL) - 1, 4, "body"),
])
def test_a_single_flipped_bit_is_located_in_its_field(index: int, bit: int, field: str) -> None:
    assert damaged_field(flip(SMALL, index, bit), 4096) == field


def test_a_flipped_bit_in_a_one_character_topic_is_in_the_topic() -> None:
    raw = make(topic="T", props={"K": "v"}, body=b"b")
    for bit in range(8):
        assert damaged_field(flip(raw, TOPIC_AT, bit), 4096) == "topic"


def test_a_flipped_bit_in_a_header_only_record_is_located() -> None:
    raw = make(topic="", props={}, body=b"", offset=0)
    assert damaged_field(flip(raw, HEADER_FIELDS["queue_id"], 1), 0) == "queue_id"


def test_a_declared_size_that_disagrees_with_the_damaged_span_is_the_damage() -> None:
    assert damaged_field(with_size(SMALL, len(SMALL) + 4), 4096) == "size"


def test_a_wrong_magic_byte_is_named() -> None:
    assert damaged_field(flip(SMALL, HEADER_FIELDS["magic"], 2), 4096) == "magic"


def test_a_flipped_bit_in_the_stored_crc_is_named() -> None:
    assert damaged_field(flip(SMALL, HEADER_FIELDS["crc"] + 1, 3), 4096) == "crc"


def test_a_span_shorter_than_a_header_is_a_wrong_size_or_a_cut_header() -> None:
    assert damaged_field(struct.pack("<I", 10) + b"\0" * 6, 0) == "header"
    assert damaged_field(struct.pack("<I", 50) + b"\0" * 6, 0) == "size"


def test_damage_of_more_than_one_bit_is_put_on_the_offset_when_the_offset_is_wrong() -> None:
    twice = flip(flip(SMALL, BODY_AT, 0), BODY_AT + 1, 0)
    assert damaged_field(twice, 4096) == "contents (CRC mismatch)"
    assert damaged_field(twice, 8192) == "commit_log_offset"


def test_the_flipped_bit_is_searched_for_only_in_small_records() -> None:
    at_limit = make(topic="T", props={}, body=b"b" * (MAX_BIT_SEARCH - HEADER_SIZE - 1))
    past_limit = make(topic="T", props={}, body=b"b" * (MAX_BIT_SEARCH - HEADER_SIZE))
    assert len(at_limit) == MAX_BIT_SEARCH
    assert damaged_field(flip(at_limit, len(at_limit) - 1), 4096) == "body"
    assert damaged_field(flip(past_limit, len(past_limit) - 1), 4096) == "contents (CRC mismatch)"


# --- tags ---------------------------------------------------------------------------------------

def test_no_tag_hashes_to_zero() -> None:
    assert tag_hash(None) == 0
    assert tag_hash("") == 0


def test_a_tag_hashes_to_its_crc32c_so_hashes_stay_stable_across_restarts() -> None:
    assert tag_hash("paid") == crc32c.crc32c(b"paid") != 0
    assert tag_hash("grüße") == crc32c.crc32c("grüße".encode())
    assert tag_hash("paid") != tag_hash("refunded")


def test_a_tag_whose_crc_is_zero_still_differs_from_no_tag() -> None:
    tag = "zero-138aIXr"  # found by solving the CRC's linear equations for its last four bytes
    assert crc32c.crc32c(tag.encode()) == 0
    assert tag_hash(tag) == 1
