"""Kafka records <-> halfmq messages: text stays text, bytes travel as base64, headers are properties."""

from __future__ import annotations

import base64

import pytest

from halfmq.broker.kafka_front.errors import InvalidRecord
from halfmq.broker.kafka_front.record_batches import Record
from halfmq.broker.kafka_front.record_mapping import kafka_record, outgoing
from halfmq.broker.store.record import StoredMessage


def test_a_text_record_becomes_a_text_message_with_its_key_headers_and_partition() -> None:
    message = outgoing(Record(0, 1, b"order-1", "été".encode(), (("h", b"v"),)), partition=3)
    assert (message.body, message.body_encoding, message.keys, message.properties, message.queue_id) == (
        "été", "utf-8", ["order-1"], {"h": "v"}, 3)


def test_a_binary_value_travels_as_base64() -> None:
    message = outgoing(Record(0, 1, None, b"\xff\x00", ()), partition=0)
    assert (message.body_encoding, base64.b64decode(message.body), message.keys) == ("base64", b"\xff\x00", None)


def test_a_header_or_key_that_is_not_utf8_is_refused() -> None:
    with pytest.raises(InvalidRecord):
        outgoing(Record(0, 1, None, b"x", (("h", b"\xff"),)), partition=0)
    with pytest.raises(InvalidRecord):
        outgoing(Record(0, 1, b"\xff", b"x", ()), partition=0)


def test_a_stored_message_is_read_as_a_record_without_the_broker_s_own_properties() -> None:
    stored = StoredMessage(topic="t", queue_id=0, queue_offset=42, commit_log_offset=0, born_timestamp=1, store_timestamp=2,
                           properties={"UNIQ_KEY": "id", "KEYS": "k", "p": "v"}, body=b"body")
    record = kafka_record(stored)
    assert (record.offset, record.timestamp, record.key, record.value, record.headers) == (42, 2, b"k", b"body", (("p", b"v"),))
