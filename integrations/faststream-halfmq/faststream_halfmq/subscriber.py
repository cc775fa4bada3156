"""A FastStream subscriber on one (consumer group, topic): the SDK's receive and settle calls under FastStream's handler.

Each subscriber long-polls its group with ``AsyncSimpleConsumer.receive`` and hands every message to FastStream, which
acks it after the handler returns, nacks it when the handler raises (the default ``AckPolicy.NACK_ON_ERROR``: the
broker redelivers it after its backoff and dead-letters it past the group's retry limit), or rejects it (settled,
never redelivered: halfmq has no reject of its own). FIFO needs nothing here: the broker hands out a message group's
messages one at a time, in order, each after the previous one is settled.

With ``transactional_id`` the subscriber runs consume-transform-produce in one Kafka-style transaction per message:
what the handler publishes and the message's ack commit together, or neither (``transactions``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
from faststream._internal.configs import SubscriberSpecificationConfig, SubscriberUsecaseConfig
from faststream._internal.constants import EMPTY
from faststream._internal.endpoint.publisher.fake import FakePublisher
from faststream._internal.endpoint.subscriber import SubscriberSpecification, SubscriberUsecase
from faststream._internal.endpoint.subscriber.mixins import TasksMixin
from faststream._internal.endpoint.utils import process_msg
from faststream.middlewares import AckPolicy
from faststream.specification.asyncapi.utils import resolve_payloads
from faststream.specification.schema import Message as SpecMessage
from faststream.specification.schema import Operation, SubscriberSpec

from halfmq import AsyncSimpleConsumer, BrokerError, Message, TopicNotFound
from halfmq.wire import ReceiveRequest

from .config import HalfmqBrokerConfig
from .message import HalfmqParser
from .response import HalfmqPublishCommand
from .transactions import ConsumerSettlement, TransactionalSettlement

if TYPE_CHECKING:
    from faststream._internal.endpoint.publisher import PublisherProto
    from faststream._internal.endpoint.subscriber.call_item import CallsCollection
    from faststream._internal.producer import ProducerProto
    from faststream.message import StreamMessage
    from faststream.response.response import PublishCommand

    from .message import HalfmqMessage
    from .producer import HalfmqConnection

__all__ = ["HalfmqSubscriber", "HalfmqSubscriberConfig", "HalfmqSubscriberSpecification"]

RECEIVE_BACKOFF_SECONDS = 1.0  # after a failed receive (broker restarting, network): the SDK has retried already


@dataclass(kw_only=True)
class HalfmqSubscriberConfig(SubscriberUsecaseConfig):
    _outer_config: HalfmqBrokerConfig = field(default_factory=HalfmqBrokerConfig)

    topic: str
    group: str
    max_messages: int = 16
    invisible_seconds: float = 30.0
    wait_seconds: float = 5.0
    max_workers: int = 1
    transactional_id: str | None = None

    @property
    def ack_policy(self) -> AckPolicy:
        if self._ack_policy is not EMPTY:
            return self._ack_policy
        if self._outer_config.ack_policy is not EMPTY:
            return self._outer_config.ack_policy
        return AckPolicy.NACK_ON_ERROR  # halfmq's own way: retries with backoff, then the group's DLQ


@dataclass(kw_only=True)
class HalfmqSubscriberSpecificationConfig(SubscriberSpecificationConfig):
    topic: str
    group: str


class HalfmqSubscriberSpecification(SubscriberSpecification[HalfmqBrokerConfig, HalfmqSubscriberSpecificationConfig]):
    """The subscriber in the AsyncAPI document: one channel per topic (with the router's prefix)."""

    @property
    def topic(self) -> str:
        return f"{self._outer_config.prefix}{self.config.topic}"

    @property
    def channel_labels(self) -> list[str]:
        return [self.topic]

    def get_schema(self) -> dict[str, SubscriberSpec]:
        payloads = self.get_payloads()
        return {self.name: SubscriberSpec(
            address=self.topic, description=self.description, bindings=None,
            operation=Operation(message=SpecMessage(title=f"{self.name}:Message", payload=resolve_payloads(payloads)),
                                bindings=None))}


class _ReplyPublisher(FakePublisher):
    """Sends a handler's answer to the message's ``reply_to`` topic."""

    def __init__(self, producer: ProducerProto[Any], topic: str) -> None:
        super().__init__(producer=producer)
        self.topic = topic

    def patch_command(self, cmd: PublishCommand | HalfmqPublishCommand) -> HalfmqPublishCommand:
        real = HalfmqPublishCommand.from_cmd(super().patch_command(cmd))
        real.destination = self.topic
        return real


async def _ensure_topic(connection: HalfmqConnection, topic: str) -> None:
    """Create ``topic`` if it does not exist yet, as a first send would: a subscriber may start before any producer.
    A refusal (no permission, a race with another creator) is left to the receive loop, which polls until it exists."""
    if connection.producer is None:
        return
    try:
        await connection.producer.get_topic(topic)
    except TopicNotFound:
        with contextlib.suppress(BrokerError):
            await connection.producer.create_topic(topic)


class HalfmqSubscriber(TasksMixin, SubscriberUsecase[Message]):
    """Receives from one consumer group's share of a topic and runs the handlers on each message."""

    _outer_config: HalfmqBrokerConfig

    def __init__(self, config: HalfmqSubscriberConfig, specification: SubscriberSpecification[Any, Any],
                 calls: CallsCollection[Message]) -> None:
        # The receive's bounds (the broker's MAX_RECEIVE, invisibility, long poll) checked here, where the subscriber
        # is declared, not in the receive loop where a mistake would only be logged, again and again.
        ReceiveRequest(max_messages=config.max_messages, invisible_seconds=config.invisible_seconds, wait_seconds=config.wait_seconds)
        if config.max_workers < 1:
            raise ValueError(f"max_workers must be >= 1, not {config.max_workers}")
        self._parsing = HalfmqParser()
        config.parser = self._parsing.parse_message
        config.decoder = self._parsing.decode_message
        super().__init__(config, specification, calls)
        self._topic, self.group = config.topic, config.group
        self.max_messages, self.invisible_seconds, self.wait_seconds = config.max_messages, config.invisible_seconds, config.wait_seconds
        self.max_workers, self.transactional_id = config.max_workers, config.transactional_id
        self._consumer: AsyncSimpleConsumer | None = None
        self._transactions: TransactionalSettlement | None = None

    @property
    def topic(self) -> str:
        return f"{self._outer_config.prefix}{self._topic}"

    def _make_response_publisher(self, message: StreamMessage[Any]) -> Sequence[PublisherProto]:
        return (_ReplyPublisher(self._outer_config.producer, message.reply_to),)

    def get_log_context(self, message: StreamMessage[Message] | None) -> dict[str, str]:
        return {"topic": self.topic, "group": self.group, "message_id": getattr(message, "message_id", "")}

    async def start(self) -> None:
        await super().start()
        if self.calls:
            await self._open()
            self.add_task(self._consume_loop, restart_on_failure=False)
        self._post_start()

    async def _open(self) -> AsyncSimpleConsumer:
        if self._consumer is None:
            connection = self._outer_config.connection
            await _ensure_topic(connection, self.topic)
            self._consumer = AsyncSimpleConsumer(connection.url, self.group, self.topic, **connection.options)
            settlement = ConsumerSettlement(self._consumer)
            if self.transactional_id is not None:
                self._transactions = await TransactionalSettlement.opened(connection, self.transactional_id, settlement)
                self._parsing.settlement = self._transactions
            else:
                self._parsing.settlement = settlement
        return self._consumer

    async def stop(self) -> None:
        await super().stop()
        if self._transactions is not None:
            await self._transactions.close()
            self._transactions = None
        if self._consumer is not None:
            await self._consumer.close()
            self._consumer = None

    async def consume(self, msg: Message) -> Any:
        if self._transactions is None:
            return await super().consume(msg)
        async with self._transactions.around(msg):
            return await super().consume(msg)

    async def _receive(self, max_messages: int) -> list[Message]:
        consumer = await self._open()
        try:
            batch: list[Message] = await consumer.receive(max_messages, self.invisible_seconds, self.wait_seconds)
        except BrokerError as exc:  # the SDK retried already; keep the subscriber alive through a broker restart
            self._outer_config.logger.log(f"receive failed: {exc!r}", logging.WARNING, self.get_log_context(None))
            await asyncio.sleep(RECEIVE_BACKOFF_SECONDS)
            return []
        return batch

    async def _consume_loop(self) -> None:
        """One worker (and a transactional subscriber): receive ``max_messages``, handle them in order, repeat.
        ``max_workers`` > 1: receive only as many as there are idle workers, and receive again as soon as one is idle,
        so a slow message never holds the others back and no message waits out its invisibility unstarted."""
        workers = 1 if self._transactions is not None else self.max_workers
        if workers == 1:
            while self.running:
                for raw in await self._receive(self.max_messages):
                    await self.consume(raw)
            return
        busy, idle = 0, asyncio.Event()

        async def one(raw: Message) -> None:
            nonlocal busy
            try:
                await self.consume(raw)
            finally:
                busy -= 1
                idle.set()

        async with anyio.create_task_group() as tg:
            while self.running:
                while busy >= workers:
                    idle.clear()
                    await idle.wait()
                for raw in await self._receive(min(self.max_messages, workers - busy)):
                    busy += 1
                    tg.start_soon(one, raw)

    async def get_one(self, *, timeout: float = 5.0) -> HalfmqMessage | None:  # noqa: ASYNC109  (FastStream's signature)
        """One message (settle it yourself), or None after ``timeout`` seconds."""
        assert not self.calls, "You can't use `get_one` method if subscriber has registered handlers."
        consumer = await self._open()
        batch = await consumer.receive(1, self.invisible_seconds, timeout)
        if not batch:
            return None
        return await self._processed(batch[0])

    async def _processed(self, raw: Message) -> HalfmqMessage:
        context = self._outer_config.context
        parser, decoder = self._get_parser_and_decoder()
        msg: HalfmqMessage = await process_msg(  # type: ignore[assignment]
            msg=raw, middlewares=(m(raw, context=context) for m in self._broker_middlewares), parser=parser, decoder=decoder)
        return msg

    async def __aiter__(self) -> AsyncIterator[HalfmqMessage]:
        consumer = await self._open()
        while True:
            for raw in await consumer.receive(self.max_messages, self.invisible_seconds, self.wait_seconds):
                yield await self._processed(raw)
