"""A transactional publisher: a half message around the handler's database work, the check-back answered by the barrier.

``broker.half_message_publisher(topic, producer_group=..., barrier=..., check_url=...)`` gives a publisher whose
``publish(body, business_key=..., run=...)`` is the SDK barrier's send: the half message first (stored, invisible),
then ``run(session)`` and the barrier's record in ONE database transaction, then the commit of the half. If the
process dies between the database commit and that end, the broker asks the producer group's check URL
(``check_app()``, served by the restarted service or another instance) and the barrier answers from its record:
committed, so the message is delivered once; a database transaction that rolled back leaves no record and the half
is rolled back. The body is encoded as every FastStream publish is (the broker's codec, content type, headers).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from faststream.response.publish_type import PublishType

from halfmq import AsyncTransactionProducer, CheckApp

from .producer import HalfmqProducer
from .response import Delay, HalfmqPublishCommand

if TYPE_CHECKING:
    from faststream._internal.basic_types import SendableMessage
    from faststream._internal.configs.broker import ConfigComposition

    from halfmq.client.sqlalchemy.async_barrier import AsyncTransactionBarrier
    from halfmq.client.sqlalchemy.barrier import TransactionBarrier
    from halfmq.client.sqlalchemy.barrier_base import AfterCommit, Sent

    from .config import HalfmqBrokerConfig
    from .producer import HalfmqConnection

__all__ = ["HalfMessagePublisher"]


class HalfMessagePublisher:
    """Publishes to one topic with RocketMQ's half messages, through an SDK barrier (see the module's docstring).

    Started and closed with its broker: the producer registers its group and check URL and heartbeats."""

    def __init__(self, config: HalfmqBrokerConfig | ConfigComposition[HalfmqBrokerConfig], topic: str, *, producer_group: str,
                 barrier: AsyncTransactionBarrier | TransactionBarrier, check_url: str | None,
                 producer_options: dict[str, Any] | None = None) -> None:
        self._config, self.topic, self.producer_group = config, topic, producer_group
        self.barrier, self.check_url = barrier, check_url
        self._producer_options = dict(producer_options or {})
        self.producer: AsyncTransactionProducer | None = None

    async def start(self, connection: HalfmqConnection) -> None:
        if self.producer is None:
            self.producer = AsyncTransactionProducer(connection.url, self.producer_group, self.barrier, check_url=self.check_url,
                                                     **{**connection.options, **self._producer_options})
            await self.producer.start()

    async def close(self) -> None:
        if self.producer is not None:
            await self.producer.close()
            self.producer = None

    def check_app(self, **options: Any) -> CheckApp:
        """The ASGI app answering the broker's check-backs: serve it at ``check_url`` (mount it in your web app)."""
        if self.producer is None:
            raise RuntimeError("start the broker first: the check app belongs to the started producer")
        return self.producer.check_app(**options)

    async def publish(self, message: SendableMessage, *, business_key: str, run: Callable[[Any], Awaitable[Any] | Any],
                      after_commit: AfterCommit | None = None, headers: dict[str, str] | None = None,
                      correlation_id: str | None = None, message_group: str | None = None, delay: Delay = None,
                      keys: list[str] | str | None = None, tag: str | None = None) -> Sent[Any]:
        """Half message, ``run(session)`` with the barrier's record in one database transaction, then the end.

        ``business_key``: what the barrier refuses to commit twice (``DuplicateBusinessKey``); the result is the
        barrier's ``Sent`` (``committed``, ``value``: what ``run`` returned, the transaction id)."""
        if self.producer is None:
            raise RuntimeError("start the broker first (`await broker.start()`, or run the FastStream app)")
        cmd = HalfmqPublishCommand(message, topic=self.topic, headers=headers,
                                   correlation_id=correlation_id or self._config.id_generator(), message_group=message_group,
                                   delay=delay, keys=keys, tag=tag, _publish_type=PublishType.PUBLISH)
        encoder = self._config.producer
        assert isinstance(encoder, HalfmqProducer)  # the broker's, or TestHalfmqBroker's in-memory one
        outgoing = await encoder._encoded(cmd)
        sent: Sent[Any] = await self.barrier.send(self.producer, self.topic, outgoing, business_key, run,
                                                  after_commit)
        return sent
