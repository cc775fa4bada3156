"""Kafka records <-> halfmq's messages: what a Kafka client produces is what every other front receives, and back.

A record's value becomes the body (text stays text, so the HTTP front hands it out as a string; other bytes travel
as base64, as the gRPC front does), its key the message's key (``KEYS``: a Kafka key is one string, handed back
whole), its headers the message's properties; the partition is the queue. Headers must be UTF-8 (halfmq's
properties are text): a record whose header is not is refused INVALID_RECORD, as is a key that is not. Back, a
message's offset in its queue is the record's offset, its store time the record's timestamp (LogAppendTime), its
user properties the headers (the broker's own properties stay inside).
"""

from __future__ import annotations

import base64

from halfmq.broker.usecases.records import SYSTEM_PROPERTIES, StoredMessage
from halfmq.wire import OutgoingMessage
from halfmq.wire.base import BodyEncoding

from .errors import InvalidRecord
from .record_batches import Record


def outgoing(record: Record, partition: int) -> OutgoingMessage:
    value = record.value or b""
    encoding: BodyEncoding
    try:
        body, encoding = value.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        body, encoding = base64.b64encode(value).decode("ascii"), "base64"
    try:
        key = record.key.decode("utf-8") if record.key else None
        properties = {name: (raw or b"").decode("utf-8") for name, raw in record.headers}
    except UnicodeDecodeError:
        raise InvalidRecord("a record's key and headers must be UTF-8 text on halfmq (its properties are text)") from None
    return OutgoingMessage(body=body, body_encoding=encoding, keys=[key] if key else None, properties=properties,
                           queue_id=partition)


def kafka_record(message: StoredMessage) -> Record:
    props = message.properties
    key = props.get("KEYS")
    headers = tuple((name, value.encode()) for name, value in props.items() if name not in SYSTEM_PROPERTIES)
    return Record(message.queue_offset, message.store_timestamp, key.encode() if key else None, message.body, headers)
