"""A halfmq message as FastStream sees it, and the mapping between the two.

FastStream's headers, content type, correlation id and reply topic travel as halfmq message properties, so a
message a FastStream app sends is an ordinary halfmq message (an SDK consumer reads the same body and properties),
and a message the SDK sends reaches a FastStream handler with its properties as headers.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from faststream.message import StreamMessage, decode_message

from halfmq import Message, OutgoingMessage, message_body_bytes, outgoing
from halfmq.client.messages import UNIQ_KEY

if TYPE_CHECKING:
    from faststream._internal.basic_types import DecodedMessage

__all__ = ["CONTENT_TYPE", "CORRELATION_ID", "REPLY_TO", "HalfmqMessage", "HalfmqParser", "Settlement", "in_memory_message",
           "to_outgoing"]

CONTENT_TYPE = "content-type"
CORRELATION_ID = "correlation_id"
REPLY_TO = "reply_to"


class Settlement(Protocol):
    """Who settles a received message with the broker: the subscriber's consumer, or its transaction."""

    async def ack(self, message: Message) -> None: ...
    async def nack(self, message: Message) -> None: ...
    async def reject(self, message: Message) -> None: ...


class HalfmqMessage(StreamMessage[Message]):
    """A delivered halfmq message: ``ack`` settles it, ``nack`` gives it back for a retry (then the DLQ, as the broker
    counts attempts), ``reject`` settles it without a retry (halfmq has no reject of its own: the message is dropped).

    A message with no receipt handle (``TestHalfmqBroker``'s, an offset read's) has nothing to settle."""

    settlement: Settlement | None = None

    async def ack(self) -> None:
        if self.committed is None and self._settleable():
            assert self.settlement is not None
            await self.settlement.ack(self.raw_message)
        await super().ack()

    async def nack(self) -> None:
        if self.committed is None and self._settleable():
            assert self.settlement is not None
            await self.settlement.nack(self.raw_message)
        await super().nack()

    async def reject(self) -> None:
        if self.committed is None and self._settleable():
            assert self.settlement is not None
            await self.settlement.reject(self.raw_message)
        await super().reject()

    def _settleable(self) -> bool:
        return self.settlement is not None and self.raw_message.receipt_handle is not None


class HalfmqParser:
    """Parses a delivered ``halfmq.Message`` into a ``HalfmqMessage`` settled by ``settlement``."""

    def __init__(self, settlement: Settlement | None = None) -> None:
        self.settlement = settlement

    async def parse_message(self, raw: Message) -> HalfmqMessage:
        properties = raw.properties
        message = HalfmqMessage(
            raw_message=raw,
            body=message_body_bytes(raw),
            headers=dict(properties),
            content_type=properties.get(CONTENT_TYPE),
            correlation_id=properties.get(CORRELATION_ID) or raw.msg_id,
            reply_to=properties.get(REPLY_TO, ""),
            message_id=raw.msg_id,
        )
        message.settlement = self.settlement
        return message

    async def decode_message(self, msg: StreamMessage[Any]) -> DecodedMessage:
        return decode_message(msg)


def to_outgoing(payload: bytes, *, content_type: str | None, headers: Mapping[str, Any] | None, correlation_id: str | None,
                reply_to: str = "", **options: Any) -> OutgoingMessage:
    """The halfmq message for an encoded FastStream body: text stays text (readable by any consumer), other bytes
    travel as base64; FastStream's fields become properties; ``options`` are the SDK's send options."""
    properties = {str(k): str(v) for k, v in (headers or {}).items()}
    if content_type:
        properties[CONTENT_TYPE] = content_type
    if correlation_id:
        properties[CORRELATION_ID] = correlation_id
    if reply_to:
        properties[REPLY_TO] = reply_to
    body: str | bytes
    try:
        body = payload.decode("utf-8")
    except UnicodeDecodeError:
        body = payload
    return outgoing(body, properties=properties, **{k: v for k, v in options.items() if v is not None})


def in_memory_message(topic: str, message: OutgoingMessage) -> Message:
    """A ``halfmq.Message`` as the broker would deliver ``message`` on ``topic``, without a broker (the test broker's):
    no receipt handle, so nothing to settle."""
    now = int(time.time() * 1000)
    msg_id = message.properties.get(UNIQ_KEY) or uuid.uuid4().hex.upper()
    return Message(msg_id=msg_id, topic=topic, queue_id=0, queue_offset=0, commit_log_offset=0, born_timestamp=now,
                   store_timestamp=now, body=message.body, body_encoding=message.body_encoding,
                   keys=[message.keys] if isinstance(message.keys, str) else list(message.keys or []), tag=message.tag,
                   properties=dict(message.properties), message_group=message.message_group, delivery_attempt=1)
