"""Kafka-style producer transactions (DESIGN section 11), in confluent-kafka's vocabulary, sync and asyncio.

Many messages to many topics, and the acks of what was consumed, commit or
abort as one::

    producer = TransactionalProducer(url, "copier-1")
    producer.init_transactions()            # fences any older instance with this transactional id
    producer.begin_transaction()
    producer.send("OUT", "hello")
    producer.send_offsets_to_transaction(received)  # their acks take effect only on commit
    producer.commit_transaction()

Errors: ``ProducerFenced`` is fatal (a newer instance owns the id: stop);
``TransactionAborted`` is abortable (call ``abort_transaction()`` and run the
whole transaction again). Sends are buffered and go out in numbered batches
(at ``batch_size``, on ``flush()`` and before the commit), so the SDK's own
retries never store a message twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType
from typing import Self, TypeVar, Unpack

from halfmq.wire import Message, OutgoingMessage, TxnEndResult, TxnSendResult

from .endpoints import Call
from .messages import Body, outgoing
from .retry import async_retrying, retrying
from .send_options import SendOptions
from .transactional_steps import TransactionalSteps
from .transport import TIMEOUT, AsyncTransport, Transport, Verify

__all__ = ["AsyncTransactionalProducer", "TransactionalProducer"]

T = TypeVar("T")


class TransactionalProducer:
    """Blocking transactional producer; one transaction at a time, from one thread."""

    def __init__(self, base_url: str | None, transactional_id: str, *, transaction_timeout_ms: int | None = None,
                 batch_size: int = 100, timeout: float = TIMEOUT, retries: int = 3,
                 token: str | None = None, verify: Verify | None = None) -> None:
        retrying(retries)
        self._retries = retries
        self._steps = TransactionalSteps(transactional_id, transaction_timeout_ms, batch_size)
        self._transport = Transport(base_url, timeout=timeout, token=token, verify=verify)

    @property
    def transactional_id(self) -> str:
        return self._steps.transactional_id

    @property
    def epoch(self) -> int | None:
        return self._steps.epoch

    def _call(self, call: Call[T]) -> T:
        try:
            result: T = retrying(self._retries)(self._transport.call, call)
        except Exception as exc:
            self._steps.failed(exc)
            raise
        return result

    def init_transactions(self) -> None:
        """Register this instance: the broker bumps the epoch and aborts what an older instance left open."""
        self._steps.initialised(self._call(self._steps.init()))

    def begin_transaction(self) -> None:
        self._call(self._steps.begin())
        self._steps.begun()

    def send(self, topic: str, message: OutgoingMessage | Body, **options: Unpack[SendOptions]) -> None:
        """Add a message to the open transaction (buffered; it becomes visible only on commit)."""
        if self._steps.add(topic, outgoing(message, **options)):
            self.flush()

    def flush(self) -> list[TxnSendResult]:
        """Hand every buffered message to the broker (still invisible); their ids and queues so far."""
        while (call := self._steps.next_pending()) is not None:
            self._steps.answered(self._call(call))
        return list(self._steps.results)

    def send_offsets_to_transaction(self, receipts: Sequence[Message | str]) -> None:
        """Ack received messages inside the transaction: hidden from their group while open, settled on commit."""
        self.flush()
        if receipts:
            acked = self._call(self._steps.acks(receipts))
            self._steps.answered(acked)

    def commit_transaction(self) -> TxnEndResult:
        """Every message visible and every ack applied, or none; a retried commit gets the first answer."""
        self.flush()
        result = self._call(self._steps.commit())
        self._steps.ended()
        return result

    def abort_transaction(self) -> TxnEndResult:
        """Nothing of the transaction becomes visible; its acked messages are delivered again."""
        self._steps.ended()
        return self._call(self._steps.abort())

    def close(self) -> None:
        self._transport.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncTransactionalProducer:
    """The asyncio flavour of ``TransactionalProducer``: the same steps, awaited."""

    def __init__(self, base_url: str | None, transactional_id: str, *, transaction_timeout_ms: int | None = None,
                 batch_size: int = 100, timeout: float = TIMEOUT, retries: int = 3,
                 token: str | None = None, verify: Verify | None = None) -> None:
        async_retrying(retries)
        self._retries = retries
        self._steps = TransactionalSteps(transactional_id, transaction_timeout_ms, batch_size)
        self._transport = AsyncTransport(base_url, timeout=timeout, pool_size=1, connections_per_client=2, max_in_flight=2,
                                         token=token, verify=verify)

    @property
    def transactional_id(self) -> str:
        return self._steps.transactional_id

    @property
    def epoch(self) -> int | None:
        return self._steps.epoch

    async def _call(self, call: Call[T]) -> T:
        try:
            result: T = await async_retrying(self._retries)(self._transport.call, call)
        except Exception as exc:
            self._steps.failed(exc)
            raise
        return result

    async def init_transactions(self) -> None:
        self._steps.initialised(await self._call(self._steps.init()))

    async def begin_transaction(self) -> None:
        await self._call(self._steps.begin())
        self._steps.begun()

    async def send(self, topic: str, message: OutgoingMessage | Body, **options: Unpack[SendOptions]) -> None:
        if self._steps.add(topic, outgoing(message, **options)):
            await self.flush()

    async def flush(self) -> list[TxnSendResult]:
        while (call := self._steps.next_pending()) is not None:
            self._steps.answered(await self._call(call))
        return list(self._steps.results)

    async def send_offsets_to_transaction(self, receipts: Sequence[Message | str]) -> None:
        await self.flush()
        if receipts:
            acked = await self._call(self._steps.acks(receipts))
            self._steps.answered(acked)

    async def commit_transaction(self) -> TxnEndResult:
        await self.flush()
        result = await self._call(self._steps.commit())
        self._steps.ended()
        return result

    async def abort_transaction(self) -> TxnEndResult:
        self._steps.ended()
        return await self._call(self._steps.abort())

    async def close(self) -> None:
        await self._transport.close()

    aclose = close

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.close()
