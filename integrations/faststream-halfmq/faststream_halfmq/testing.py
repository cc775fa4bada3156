"""``TestHalfmqBroker``: FastStream's in-memory test client for a ``HalfmqBroker`` (no broker, no network).

``async with TestHalfmqBroker(broker) as br: await br.publish(...)`` routes each publish straight to the subscribers
of its topic (one per consumer group, as the broker delivers), encoded exactly as the real producer encodes it, so
handlers, parsers, middlewares and ``handler.mock`` behave as in production. ``with_real=True`` runs the same test
against the real broker at the broker's URL.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Sequence
from contextlib import contextmanager
from typing import Any, cast
from unittest.mock import MagicMock

import anyio
from faststream._internal.endpoint.utils import ParserComposition
from faststream._internal.parser import DefaultCodec
from faststream._internal.testing.broker import TestBroker, change_producer
from faststream.exceptions import SubscriberNotFound

from halfmq import Message

from .broker import HalfmqBroker
from .message import HalfmqParser, in_memory_message, to_outgoing
from .producer import HalfmqProducer
from .publisher import HalfmqPublisher
from .response import HalfmqPublishCommand
from .subscriber import HalfmqSubscriber

__all__ = ["TestHalfmqBroker"]

FAKE_GROUP = "faststream-test"


class TestHalfmqBroker(TestBroker[HalfmqBroker, Any], broker=HalfmqBroker):
    """In-memory test double for ``HalfmqBroker`` (FastStream's ``TestBroker`` contract)."""

    def create_publisher_fake_subscriber(self, broker: HalfmqBroker, publisher: HalfmqPublisher) -> tuple[HalfmqSubscriber, bool]:
        for sub in self._subscribers(self.brokers):
            if sub.topic == publisher.topic:
                return sub, True
        return broker.subscriber(publisher.topic, group=FAKE_GROUP, persistent=False), False

    @staticmethod
    def _subscribers(brokers: Iterable[HalfmqBroker]) -> Iterable[HalfmqSubscriber]:
        return (cast(HalfmqSubscriber, s) for b in brokers for s in b.subscribers)

    @contextmanager
    def _patch_producer(self, broker: HalfmqBroker) -> Generator[None, None, None]:
        with change_producer(broker.config.broker_config, FakeProducer(broker, self.brokers)):
            yield

    async def _fake_connect(self, broker: HalfmqBroker, *args: Any, **kwargs: Any) -> MagicMock:  # type: ignore[override]
        return MagicMock()


class FakeProducer(HalfmqProducer):
    """Delivers each publish in memory to one subscriber per consumer group of its topic."""

    def __init__(self, broker: HalfmqBroker, brokers: Sequence[HalfmqBroker]) -> None:
        self.broker, self.brokers = broker, brokers
        default = HalfmqParser()
        self._parser = ParserComposition(broker._parser, default.parse_message)
        self._decoder = ParserComposition(broker._decoder, default.decode_message)
        self.codec = broker.config.broker_codec or DefaultCodec()
        self.serializer = broker.config.fd_config._serializer
        self.connection = None

    async def _message(self, cmd: HalfmqPublishCommand, body: Any = None) -> Message:
        payload, content_type = await self.codec.encode(cmd.body if body is None else body, self.serializer)
        outgoing = to_outgoing(payload, content_type=content_type, headers=cmd.headers, correlation_id=cmd.correlation_id,
                               reply_to=cmd.reply_to, **cmd.send_options())
        return in_memory_message(cmd.destination, outgoing)

    def _targets(self, topic: str) -> list[HalfmqSubscriber]:
        by_group: dict[str, HalfmqSubscriber] = {}
        for sub in TestHalfmqBroker._subscribers(self.brokers):
            if sub.topic == topic:
                by_group.setdefault(sub.group, sub)
        return list(by_group.values())

    async def publish(self, cmd: HalfmqPublishCommand) -> None:
        message = await self._message(cmd)
        for sub in self._targets(cmd.destination):
            await sub.process_message(message)

    async def publish_batch(self, cmd: HalfmqPublishCommand) -> list[Any]:
        for body in cmd.batch_bodies:
            message = await self._message(cmd, body)
            for sub in self._targets(cmd.destination):
                await sub.process_message(message)
        return []

    async def request(self, cmd: HalfmqPublishCommand) -> Message:
        message = await self._message(cmd)
        for sub in self._targets(cmd.destination):
            with anyio.fail_after(cmd.timeout or 30.0):
                result = await sub.process_message(message)
            answer = HalfmqPublishCommand(result.body, topic=cmd.destination, headers=result.headers,
                                          correlation_id=result.correlation_id, _publish_type=cmd.publish_type)
            return await self._message(answer)
        raise SubscriberNotFound
