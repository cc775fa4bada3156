"""The broker's own state records (topic, acks, producer, receipt key) encode and decode back to what was written."""

from __future__ import annotations

import json

from halfmq.broker.store import state_records as state
from halfmq.broker.store.topics import TXN_STATE_TOPIC


def test_an_acks_record_carries_every_settled_offset_and_reads_back_the_same() -> None:
    acks = [("g", "PAID", 0, 7), ("g", "PAID", 3, 12_345_678_901)]
    record = state.acks_record(acks)
    assert (record.topic, record.queue_id, record.properties) == (TXN_STATE_TOPIC, 0, {
        state.TXN_OP: "acks", state.TAGS: state.ACKS_TAG, "INDEX_KEYS": "PAID/0@7 PAID/3@12345678901"})  # a journey finds them
    assert record.tag == state.ACKS_TAG  # its consume-queue entry says it is one, (store.state_records)
    assert state.decode_acks(record.body) == acks


def test_acks_written_by_an_older_broker_with_json_read_back_the_same() -> None:
    acks = [("gröup", "T", 1, 2)]
    assert state.decode_acks(json.dumps(acks, separators=(",", ":")).encode()) == acks
    assert state.decode_acks(b"") == []


def test_a_topic_record_names_the_topic_and_its_queue_count() -> None:
    record = state.topic_record("EMPTY", 7)
    assert record.properties[state.TXN_OP] == "topic"
    assert state.topic_of(record.properties) == state.TopicRecord("EMPTY", 7)


def test_a_producer_registration_and_its_expiry_read_back_the_same() -> None:
    registered = state.ProducerRecord("pg", "c1", "http://127.0.0.1:9/check", "127.0.0.1:9", expired=False)
    expired = state.ProducerRecord("pg", "c2", None, None, expired=True)
    for entry in (registered, expired):
        record = state.producer_record(entry)
        assert record.properties[state.TXN_OP] == "producer"
        assert state.producer_of(record.properties) == entry


def test_a_receipt_key_record_reads_back_the_key() -> None:
    key = bytes(range(32))
    assert state.receipt_key_of(state.receipt_key_record(key).body) == key


def test_the_kinds_are_the_values_written_on_disk() -> None:
    assert state.KINDS == {"topic", "acks", "offsets-reset", "group-deleted", "topic-deleted", "producer", "receipt-key"}


def test_an_offsets_reset_record_carries_its_rows_and_the_acks_tag() -> None:
    item = state.offsets_reset_record([("g", "T", 0, 3)])
    assert item.properties[state.TXN_OP] == "offsets-reset" and item.tag == state.ACKS_TAG
    assert state.decode_acks(item.body) == [("g", "T", 0, 3)]
