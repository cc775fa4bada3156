"""Message bodies on the way out and on the way back.

The wire carries bodies as text; binary data travels as base64 so it survives
JSON, and structured data as JSON text so consumers in any language can read
it. Every outgoing message gets a UNIQ_KEY (RocketMQ's client-side message id)
before its first attempt, so a retried send carries the same id and the
duplicate can be recognised downstream.
"""

from __future__ import annotations

import base64
import uuid
from datetime import datetime, timedelta
from typing import Any, Literal, Unpack

import msgspec

from halfmq.errors import InvalidTopicName
from halfmq.wire import Message, OutgoingMessage
from halfmq.wire.base import NAME_RULE, is_valid_name

from .send_options import SendOptions, check_send_options

__all__ = ["UNIQ_KEY", "Body", "epoch_ms", "sendable_topic", "message_body_bytes", "message_json", "outgoing", "with_uniq_key"]

UNIQ_KEY = "UNIQ_KEY"
"""The property holding a message's client-side id (RocketMQ's name): set once before the first attempt, so a retry repeats it."""

Body = str | bytes | bytearray | memoryview | dict[str, Any] | list[Any]


def with_uniq_key(message: OutgoingMessage) -> OutgoingMessage:
    """The message with a UNIQ_KEY property, copying rather than mutating the caller's."""
    if message.properties.get(UNIQ_KEY):
        return message
    return msgspec.structs.replace(message, properties={**message.properties, UNIQ_KEY: uuid.uuid4().hex.upper()})


def outgoing(message: OutgoingMessage | Body, **options: Unpack[SendOptions]) -> OutgoingMessage:
    """An ``OutgoingMessage`` with a UNIQ_KEY, from a ready message or a bare body with the send options.

    Public as ``halfmq.outgoing``: where a message is given ready-made (``also=`` companions, ``send_batch``) it takes
    the options of ``send`` in the same spelling (``delay=`` seconds, ``deliver_at=``, ``message_group=`` …), so
    nobody converts to the wire's milliseconds: ``also=[("ORDER_PAYMENT_DUE", outgoing(body, delay=30 * 60))]``.
    """
    check_send_options(options, beside_a_message=isinstance(message, OutgoingMessage))
    if isinstance(message, OutgoingMessage):
        return with_uniq_key(message)
    encoding: Literal["utf-8", "base64"]
    if isinstance(message, str):
        body, encoding = message, "utf-8"
    elif isinstance(message, (bytes, bytearray, memoryview)):
        body, encoding = base64.b64encode(message).decode("ascii"), "base64"
    elif isinstance(message, (dict, list)):
        body, encoding = msgspec.json.encode(message).decode("utf-8"), "utf-8"
    else:
        raise TypeError(f"a message body must be str, bytes, dict or list, not {type(message).__name__}")
    built = OutgoingMessage(body=body, body_encoding=encoding, keys=options.get("keys"), tag=options.get("tag"),
                            properties=dict(options.get("properties") or {}), queue_id=options.get("queue_id"),
                            sharding_key=options.get("sharding_key"), message_group=options.get("message_group"),
                            deliver_at_ms=epoch_ms(options.get("deliver_at")), delay_ms=_duration_ms(options.get("delay")))
    return with_uniq_key(built)


def sendable_topic(topic: str) -> str:
    """``topic`` itself, or the broker's own ``InvalidTopicName`` raised at the call site, before any request: a name
    with ``/`` would otherwise reach the broker as another URL path and come back as a puzzling ``RouteNotFound``.
    Only sends and topic creation check: topics named before the rule (``%DLQ%…``) can still be read and consumed."""
    if is_valid_name(topic):
        return topic
    shown = topic if not isinstance(topic, str) or len(topic) <= 64 else f"{topic[:64]}… ({len(topic)} characters)"
    raise InvalidTopicName(f"invalid topic {shown!r}: {NAME_RULE}")


def epoch_ms(when: datetime | float | None, what: str = "deliver_at") -> int | None:
    """A time on the wire (``deliver_at``, a search's ``since``): epoch milliseconds (a naive datetime is refused: its
    zone would be a guess)."""
    if when is None:
        return None
    if isinstance(when, datetime):
        if when.tzinfo is None:
            raise ValueError(f"{what} must be an aware datetime (datetime.now(timezone.utc) + ...) or epoch seconds")
        return round(when.timestamp() * 1000)
    return round(when * 1000)


def _duration_ms(delay: timedelta | float | None) -> int | None:
    """``delay`` on the wire: milliseconds, from seconds or a timedelta."""
    if delay is None:
        return None
    return round((delay.total_seconds() if isinstance(delay, timedelta) else delay) * 1000)


def message_body_bytes(message: Message | OutgoingMessage) -> bytes:
    """The body exactly as the producer handed it over, whatever its wire encoding."""
    if message.body_encoding == "base64":
        return base64.b64decode(message.body, validate=True)
    return message.body.encode("utf-8")


def message_json(message: Message | OutgoingMessage) -> Any:
    """The body parsed as JSON (as sent by ``send(topic, {...})``)."""
    return msgspec.json.decode(message_body_bytes(message))
