"""The barrier for a blocking SQLAlchemy ``Engine`` in an asyncio service (FastAPI with sync sessions).

Five lines instead of a listener and a record table::

    barrier = TransactionBarrier(engine)
    producer = AsyncTransactionProducer(broker_url, "orders", barrier, check_url=...)
    app.add_route("/halfmq/check", producer.check_app(), methods=["POST"])
    ...
    sent = await barrier.send(producer, "ORDERS", message, order_id, lambda session: session.add(order))

``send`` sends the half message; then ``run(session)`` and the insert of the record
``(transaction id, business_key)`` commit in ONE database transaction; then the transaction is
ended COMMIT. If ``run`` (or the commit) raises, the transaction is ended ROLLBACK and the error
re-raised; a business key committed before fails the insert and raises ``DuplicateBusinessKey``;
a local transaction still uncommitted ``local_tx_timeout`` after the send began is rolled back
(``LocalTransactionTimedOut``), which is what makes the check-back's horizon safe.
The check-back is answered from the record (``horizon``).

Concurrent sends share database transactions (``halfmq.client.database_writes``): the local
transactions that arrive while one commits form the next, in a worker thread. So ``run`` is a
blocking function, runs in a worker thread, and may run twice: if one ``run`` of a batch fails,
nothing of the batch is kept and each is redone in a transaction of its own, so a failure fails
its own send only. ``run`` must therefore change nothing but the session. A send's result is
known only after its transaction has committed.

The blocking ``TransactionProducer`` is not supported: the barrier's local transaction is a
coroutine (it waits for its group commit).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any, Unpack

from sqlalchemy import Engine
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from halfmq.client.async_transaction_producer import Also, AsyncTransactionProducer
from halfmq.client.database_writes import DatabaseWriteBatcher
from halfmq.client.listener import LocalTransactionState
from halfmq.client.messages import Body
from halfmq.client.send_options import SendOptions
from halfmq.wire import Message, OutgoingMessage

from .barrier_base import AfterCommit, BarrierBase, DuplicateBusinessKey, R, Sent, Work

__all__ = ["TransactionBarrier"]

Item = tuple[Work[Any], str]


class TransactionBarrier(BarrierBase):
    """Transactional messages over a blocking ``Engine``; the listener of an ``AsyncTransactionProducer``.

    ``engine`` is the one the business tables live in (on SQLite, give it ``BEGIN IMMEDIATE``
    for writes if other processes write too). See the module docstring for ``send``.
    """

    def __init__(self, engine: Engine, *, write_batch_max: int = 64, **settings: Any) -> None:
        super().__init__(**settings)
        self.engine = engine
        self._sessions = sessionmaker(engine, expire_on_commit=False)
        self._writes: DatabaseWriteBatcher[Item, Any] = DatabaseWriteBatcher(self._write_batch, write_batch_max)

    async def send(self, producer: AsyncTransactionProducer, topic: str, message: OutgoingMessage | Body, business_key: str,
                   run: Callable[[Session], R], after_commit: AfterCommit | None = None, *, also: Also = (),
                   **options: Unpack[SendOptions]) -> Sent[R]:
        """Half message, then ``run(session)`` and the record in one DB transaction, then the end.

        ``options``: every send's (``message_group=``, ``delay=`` seconds, ``deliver_at=``, ``keys=`` …), as on
        ``send_in_transaction``.

        ``after_commit(value)`` runs after the commit and before the end (returning ``UNKNOW``
        leaves the end to the check-back: fault injection, tests). ``also=[(topic, message), ...]``:
        more messages in the same transaction (one record), delivered with ``message`` or not at all.
        """
        return await self._send(producer, topic, message, business_key, run, after_commit, also, options)

    # --- the listener ----------------------------------------------------------------
    async def execute_local_transaction(self, msg: OutgoingMessage, work: Work[Any]) -> LocalTransactionState:
        """The producer's call: ``work.run`` and the record, in the next shared database transaction."""
        txid = self._txid_of_work(msg, work)
        work.value = await self._writes.submit((work, txid))
        return await self._after_commit(work)

    def check_local_transaction(self, msg: Message) -> LocalTransactionState:
        """Runs in a worker thread of the check app: one indexed lookup."""
        txid = self._transaction_id(msg)
        if txid is None:
            return LocalTransactionState.UNKNOW
        with self.engine.connect() as conn:
            return self._answer(msg, self._found(conn, txid))

    def transaction_of(self, business_key: str) -> str | None:
        """The transaction id that committed ``business_key`` (blocking), while its record is kept."""
        with self.engine.connect() as conn:
            return self._txid_of(conn, business_key)

    # --- writes (in a worker thread) ---------------------------------------------------
    def _write_batch(self, batch: list[Item]) -> Sequence[Any]:
        """All the batch in one transaction; if anything of it fails, each alone (its own failure)."""
        if len(batch) > 1:
            try:
                with self._sessions.begin() as session:
                    values = [work.run(session) for work, _ in batch]
                    self._record_all(session, batch)
                return values
            except Exception:  # noqa: BLE001 - redone item by item below, where each failure is its item's
                pass
        outcomes: list[Any] = []
        for item in batch:
            try:
                outcomes.append(self._write_one(*item))
            except Exception as exc:  # noqa: BLE001 - this item's own failure, raised to its sender
                outcomes.append(exc)
        return outcomes

    def _write_one(self, work: Work[Any], txid: str) -> Any:
        try:
            with self._sessions.begin() as session:
                value = work.run(session)
                self._record_all(session, [(work, txid)])
            return value
        except IntegrityError as exc:
            with self.engine.connect() as conn:
                if self._key_taken(conn, work.business_key):
                    raise DuplicateBusinessKey(work.business_key) from exc
            raise

    async def purge(self) -> int:
        """Delete the records older than ``retention``, ``cleanup_batch`` rows per transaction."""
        return await asyncio.to_thread(self.purge_blocking)

    def purge_blocking(self) -> int:
        """``purge`` for a caller without an event loop (a cron job, a migration script)."""
        total = 0
        while True:
            with self.engine.begin() as conn:
                deleted = self._purge_batch(conn)
            total += deleted
            if deleted < self.cleanup_batch:
                return total
