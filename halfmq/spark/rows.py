"""A message as a Spark row: the source's schema and the tuple each message becomes (plain values, no Spark)."""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from typing import Any

from halfmq.wire import Message

from .options import BodyFormat

COLUMNS = ("topic STRING, queue_id INT, queue_offset BIGINT, msg_id STRING, keys ARRAY<STRING>, tag STRING, "
           "message_group STRING, body {body}, properties MAP<STRING, STRING>, born_at TIMESTAMP, stored_at TIMESTAMP")


def schema_ddl(body: BodyFormat) -> str:
    """The rows' schema as DDL; ``body`` is text (a binary body's bytes read as UTF-8) or the raw bytes."""
    return COLUMNS.format(body="STRING" if body is BodyFormat.STRING else "BINARY")


def message_row(message: Message, body: BodyFormat) -> tuple[Any, ...]:
    return (message.topic, message.queue_id, message.queue_offset, message.msg_id, list(message.keys), message.tag,
            message.message_group, body_value(message, body), dict(message.properties),
            utc(message.born_timestamp), utc(message.store_timestamp))


def body_value(message: Message, body: BodyFormat) -> str | bytes:
    raw = base64.b64decode(message.body) if message.body_encoding == "base64" else None
    if body is BodyFormat.STRING:
        return message.body if raw is None else raw.decode("utf-8", errors="replace")
    return message.body.encode() if raw is None else raw


def utc(epoch_ms: int) -> datetime:
    return datetime.fromtimestamp(epoch_ms / 1000, UTC)
