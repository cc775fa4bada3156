"""Sends FastStream's publishes with the SDK's ``AsyncProducer``, or into the open consume-transform-produce transaction.

A transactional subscriber (``transactional_id=``) opens a Kafka-style transaction around its handler and marks it
current for the handler's task (``CURRENT_TRANSACTION``): every publish made there, by ``broker.publish``, a
``@publisher`` or the handler's return value, joins that transaction, and the consumed message's ack commits with it.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from faststream._internal.endpoint.utils import ParserComposition
from faststream._internal.parser import DefaultCodec
from faststream._internal.producer import ProducerProto
from faststream.exceptions import FeatureNotSupportedException, IncorrectState

from halfmq import AsyncProducer, SendResult

from .message import HalfmqParser, to_outgoing
from .response import HalfmqPublishCommand

if TYPE_CHECKING:
    from fast_depends.library.serializer import SerializerProto
    from faststream._internal.parser import CodecProto
    from faststream._internal.types import AsyncCallable, CustomCallable

__all__ = ["CURRENT_TRANSACTION", "HalfmqConnection", "HalfmqProducer"]

CURRENT_TRANSACTION: ContextVar[AsyncProducer[None] | None] = ContextVar("faststream_halfmq_transaction", default=None)
"""The transactional producer whose transaction the running handler's publishes join (None: plain sends)."""


@dataclass
class HalfmqConnection:
    """Where the broker is and how to reach it (the SDK's transport options), with the one plain producer all
    publishes share; subscribers make their own consumers from the same settings."""

    url: str
    options: dict[str, Any] = field(default_factory=dict)
    producer: AsyncProducer[SendResult] | None = None

    async def open(self) -> HalfmqConnection:
        self.producer = AsyncProducer(self.url, **self.options)
        return self

    async def close(self) -> None:
        if self.producer is not None:
            await self.producer.close()
            self.producer = None


class HalfmqProducer(ProducerProto[HalfmqPublishCommand]):
    """FastStream's producer for halfmq: one ``send`` per publish, ``send_batch`` for a batch."""

    _parser: AsyncCallable
    _decoder: AsyncCallable

    def __init__(self, parser: CustomCallable | None = None, decoder: CustomCallable | None = None) -> None:
        default = HalfmqParser()
        self._parser = ParserComposition(parser, default.parse_message)
        self._decoder = ParserComposition(decoder, default.decode_message)
        self.codec: CodecProto = DefaultCodec()
        self.serializer: SerializerProto | None = None
        self.connection: HalfmqConnection | None = None

    def connect(self, connection: HalfmqConnection, serializer: SerializerProto | None, codec: CodecProto | None) -> None:
        self.connection, self.serializer, self.codec = connection, serializer, codec or DefaultCodec()

    def disconnect(self) -> None:
        self.connection = None

    async def _encoded(self, cmd: HalfmqPublishCommand, body: Any = None) -> Any:
        payload, content_type = await self.codec.encode(cmd.body if body is None else body, self.serializer)
        return to_outgoing(payload, content_type=content_type, headers=cmd.headers, correlation_id=cmd.correlation_id,
                           reply_to=cmd.reply_to, **cmd.send_options())

    def _plain(self) -> AsyncProducer[SendResult]:
        if self.connection is None or self.connection.producer is None:
            raise IncorrectState("HalfmqBroker is not connected: call `await broker.connect()` or start the app first")
        return self.connection.producer

    async def publish(self, cmd: HalfmqPublishCommand) -> SendResult | None:
        """The send's result; None when the message joined the open transaction (visible at its commit)."""
        message = await self._encoded(cmd)
        transaction = CURRENT_TRANSACTION.get()
        if transaction is not None:
            await transaction.send(cmd.destination, message)
            return None
        return await self._plain().send(cmd.destination, message)

    async def publish_batch(self, cmd: HalfmqPublishCommand) -> list[SendResult]:
        messages = [await self._encoded(cmd, body) for body in cmd.batch_bodies]
        if CURRENT_TRANSACTION.get() is not None:
            raise FeatureNotSupportedException("publish_batch inside a transactional handler: publish the messages one by one")
        results: list[SendResult] = await self._plain().send_batch(cmd.destination, messages)
        return results

    async def request(self, cmd: HalfmqPublishCommand) -> Any:
        raise FeatureNotSupportedException(
            "halfmq has no temporary reply queues: publish with reply_to=<topic> and subscribe to that topic instead")
