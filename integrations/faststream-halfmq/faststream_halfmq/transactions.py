"""How a received message is settled: by its consumer, or inside a consume-transform-produce transaction.

A transactional subscriber (``@broker.subscriber(topic, group=..., transactional_id="credit-1")``) owns one Kafka-style
transactional producer (``AsyncProducer(transactional_id=...)``, fenced by its id: a restarted instance aborts what the
killed one left open). For each message it begins a transaction and makes it current for the handler
(``CURRENT_TRANSACTION``), so every publish the handler makes joins it. FastStream's ack then puts the message's
receipt into the transaction and commits: the outputs become visible and the input is settled together, or neither
(a failed commit leaves the message to be delivered again, with no output visible). A nack or reject aborts.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from halfmq import AsyncProducer, AsyncSimpleConsumer, Message

from .producer import CURRENT_TRANSACTION

if TYPE_CHECKING:
    from .producer import HalfmqConnection

__all__ = ["ConsumerSettlement", "TransactionalSettlement"]


class ConsumerSettlement:
    """Settles with the subscriber's consumer: ack, nack (redelivered after the broker's backoff), reject (settled
    without a retry: halfmq's settle has ack and nack only, and a rejected message must not come back)."""

    def __init__(self, consumer: AsyncSimpleConsumer) -> None:
        self.consumer = consumer

    async def ack(self, message: Message) -> None:
        await self.consumer.ack([message])

    async def nack(self, message: Message) -> None:
        await self.consumer.nack([message], reason="faststream handler failed")

    async def reject(self, message: Message) -> None:
        await self.consumer.ack([message])


class TransactionalSettlement:
    """The ack commits the transaction the handler's publishes joined; nack and reject abort it, then settle as
    ``ConsumerSettlement`` does."""

    def __init__(self, producer: AsyncProducer[None], plain: ConsumerSettlement) -> None:
        self.producer, self.plain = producer, plain
        self._open = False

    @classmethod
    async def opened(cls, connection: HalfmqConnection, transactional_id: str, plain: ConsumerSettlement) -> TransactionalSettlement:
        producer = AsyncProducer(connection.url, transactional_id=transactional_id, **connection.options)
        await producer.init_transactions()  # fences an older instance of this id and aborts what it left open
        return cls(producer, plain)

    @asynccontextmanager
    async def around(self, message: Message) -> AsyncIterator[None]:
        """One transaction for the handling of ``message``; aborted if the handler's run ends without a settle
        (a manual-ack handler that settled nothing, a cancelled task)."""
        await self.producer.begin_transaction()
        self._open = True
        token = CURRENT_TRANSACTION.set(self.producer)
        try:
            yield
        finally:
            CURRENT_TRANSACTION.reset(token)
            if self._open:
                await self._abort()

    async def _abort(self) -> None:
        self._open = False
        await self.producer.abort_transaction()

    async def ack(self, message: Message) -> None:
        if not self._open:  # acked outside a transaction (get_one, a second ack): a plain ack
            await self.plain.ack(message)
            return
        try:
            await self.producer.send_offsets_to_transaction([message])
            await self.producer.commit_transaction()
            self._open = False
        except BaseException:
            await self._abort()
            raise

    async def nack(self, message: Message) -> None:
        if self._open:
            await self._abort()
        await self.plain.nack(message)

    async def reject(self, message: Message) -> None:
        if self._open:
            await self._abort()
        await self.plain.reject(message)

    async def close(self) -> None:
        await self.producer.close()
