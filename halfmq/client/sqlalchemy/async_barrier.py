"""The barrier for an asyncio SQLAlchemy ``AsyncEngine``: ``TransactionBarrier`` with async sessions.

``run`` is a coroutine function taking an ``AsyncSession``; it and the record insert commit in
one database transaction per send. There is no group commit here: each send has its own
transaction on the async driver's connection pool (a driver that does blocking I/O in worker
threads, such as aiosqlite, already pays no event-loop stall per statement). Everything else,
the check-back, the cleanup and the errors, is as in ``barrier``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Unpack

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from halfmq.client.async_transaction_producer import Also, AsyncTransactionProducer
from halfmq.client.listener import LocalTransactionState
from halfmq.client.messages import Body
from halfmq.client.send_options import SendOptions
from halfmq.wire import Message, OutgoingMessage

from .barrier_base import AfterCommit, BarrierBase, DuplicateBusinessKey, R, Sent, Work

__all__ = ["AsyncTransactionBarrier"]


class AsyncTransactionBarrier(BarrierBase):
    """Transactional messages over an ``AsyncEngine``; the listener of an ``AsyncTransactionProducer``."""

    def __init__(self, engine: AsyncEngine, **settings: Any) -> None:
        super().__init__(**settings)
        self.engine = engine
        self._sessions = async_sessionmaker(engine, expire_on_commit=False)

    async def send(self, producer: AsyncTransactionProducer, topic: str, message: OutgoingMessage | Body, business_key: str,
                   run: Callable[[AsyncSession], Awaitable[R]], after_commit: AfterCommit | None = None, *, also: Also = (),
                   **options: Unpack[SendOptions]) -> Sent[R]:
        """Half message, then ``await run(session)`` and the record in one DB transaction, then the end (``also`` and
        ``options``: as ``TransactionBarrier.send``)."""
        return await self._send(producer, topic, message, business_key, run, after_commit, also, options)

    async def execute_local_transaction(self, msg: OutgoingMessage, work: Work[Any]) -> LocalTransactionState:
        """The producer's call: ``work.run`` and the record in one database transaction of this send's own."""
        txid = self._txid_of_work(msg, work)
        try:
            async with self._sessions.begin() as session:
                work.value = await work.run(session)
                await session.run_sync(self._record_all, [(work, txid)])
        except IntegrityError as exc:
            async with self.engine.connect() as conn:
                if await conn.run_sync(self._key_taken, work.business_key):
                    raise DuplicateBusinessKey(work.business_key) from exc
            raise
        return await self._after_commit(work)

    async def check_local_transaction(self, msg: Message) -> LocalTransactionState:
        """The check app's call: one indexed lookup of the record, judged against the horizon (``horizon``)."""
        txid = self._transaction_id(msg)
        if txid is None:
            return LocalTransactionState.UNKNOW
        async with self.engine.connect() as conn:
            return self._answer(msg, await conn.run_sync(self._found, txid))

    async def transaction_of(self, business_key: str) -> str | None:
        """The transaction id that committed ``business_key``, while its record is kept."""
        async with self.engine.connect() as conn:
            return await conn.run_sync(self._txid_of, business_key)

    async def purge(self) -> int:
        """Delete the records older than ``retention``, ``cleanup_batch`` rows per transaction."""
        total = 0
        while True:
            async with self.engine.begin() as conn:
                deleted = await conn.run_sync(self._purge_batch)
            total += deleted
            if deleted < self.cleanup_batch:
                return total
