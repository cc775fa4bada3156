"""What the sync and asyncio barriers share: settings, the check-back answer, the send's outcome.

A barrier is the transaction listener of one ``AsyncTransactionProducer``: the producer sends
the half message, calls the barrier's ``execute_local_transaction`` (the caller's ``run`` and
the record insert in ONE database transaction), and ends the transaction by its outcome. The
check app the producer serves (``producer.check_app()``) calls the barrier's
``check_local_transaction``, which answers from the records table (``horizon``). So a service
writes no listener and keeps no bookkeeping of its own.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Generic, TypeVar

from sqlalchemy import Connection, MetaData, Table, delete, exists, select
from sqlalchemy.orm import Session

from halfmq.client.async_transaction_producer import Also, AsyncTransactionProducer
from halfmq.client.half_message_steps import TransactionSendResult
from halfmq.client.listener import LocalTransactionState
from halfmq.client.loop_thread import cancel
from halfmq.client.messages import Body
from halfmq.client.send_options import SendOptions
from halfmq.wire import Message, OutgoingMessage, SendStatus

from .horizon import DEFAULT_COMMIT_GRACE, DEFAULT_LOCAL_TX_TIMEOUT, CheckAnswer, Horizon, check_answer, half_age_seconds
from .records import transaction_records_table

__all__ = ["AfterCommit", "BarrierBase", "BarrierError", "DuplicateBusinessKey", "HalfNotDurable", "LocalTransactionTimedOut", "R", "Sent", "Work"]

log = logging.getLogger("halfmq.client.sqlalchemy.barrier")

R = TypeVar("R")  # what the caller's ``run`` returns, handed back in ``Sent.value``

# Long enough that no check-back can still arrive for a deleted record: the broker asks about a
# pending transaction for transaction_timeout + transaction_check_max * transaction_check_interval
# (about 80 s by default) and forgets resolved ones after transaction_retention (900 s).
DEFAULT_RETENTION = 24 * 3600.0
DEFAULT_CLEANUP_INTERVAL = 300.0
DEFAULT_CLEANUP_BATCH = 1000

_STATES = {
    CheckAnswer.COMMIT: LocalTransactionState.COMMIT_MESSAGE,
    CheckAnswer.ROLLBACK: LocalTransactionState.ROLLBACK_MESSAGE,
    CheckAnswer.UNKNOWN: LocalTransactionState.UNKNOW,
}

AfterCommit = Callable[[Any], LocalTransactionState | None | Awaitable[LocalTransactionState | None]]


class BarrierError(Exception):
    """A send the barrier refused; ``code`` is stable."""

    code = "BARRIER_ERROR"


class DuplicateBusinessKey(BarrierError):
    """Another local transaction already committed this business key: this one was rolled back."""

    code = "DUPLICATE_BUSINESS_KEY"

    def __init__(self, business_key: str) -> None:
        super().__init__(f"business key {business_key!r} was already committed by another transaction")
        self.business_key = business_key


class HalfNotDurable(BarrierError):
    """The broker stored the half message without knowing it durable: rolled back, ``run`` never ran."""

    code = "HALF_NOT_DURABLE"


class LocalTransactionTimedOut(BarrierError):
    """The local transaction ran past ``local_tx_timeout`` and was rolled back instead of committed.

    Past that time a check-back may already be on its way to answering ROLLBACK (at the
    horizon), so committing late could commit a change whose message is rolled back.
    """

    code = "LOCAL_TRANSACTION_TIMED_OUT"


@dataclass(eq=False)
class Work(Generic[R]):
    """One send's local transaction: what the producer hands the barrier as ``arg``.

    ``deadline`` (on ``clock``, ``time.monotonic``) is ``local_tx_timeout`` after the send began, before its half.
    """

    business_key: str
    run: Callable[..., Any]
    after_commit: AfterCommit | None = None
    value: Any = field(default=None)
    deadline: float = float("inf")
    clock: Callable[[], float] = field(default=time.monotonic, repr=False)

    def check_deadline(self) -> None:
        """Raise, inside the transaction and before its commit, if the local transaction took too long."""
        if self.clock() > self.deadline:
            raise LocalTransactionTimedOut(f"the local transaction of {self.business_key!r} ran past local_tx_timeout; rolled back")


@dataclass(frozen=True, slots=True)
class Sent(Generic[R]):
    """A send whose local transaction committed: ``run``'s value and the producer's result.

    ``committed`` says the broker acknowledged the commit; when False (the end was lost, or
    ``after_commit`` left it to the check-back) the check-back commits it from the record.
    """

    value: R
    result: TransactionSendResult

    @property
    def transaction_id(self) -> str:
        """The broker's id of this send's transaction, as stored in the record."""
        return self.result.transaction_id

    @property
    def committed(self) -> bool:
        """The broker acknowledged the commit (False: the check-back will commit it from the record)."""
        return self.result.local_state is LocalTransactionState.COMMIT_MESSAGE and self.result.end_error is None


class BarrierBase:
    """Settings, the records table and the decisions; the I/O is the subclasses'."""

    def __init__(self, *, local_tx_timeout: float = DEFAULT_LOCAL_TX_TIMEOUT, commit_grace: float = DEFAULT_COMMIT_GRACE,
                 retention: float = DEFAULT_RETENTION, cleanup_interval: float = DEFAULT_CLEANUP_INTERVAL, cleanup_batch: int = DEFAULT_CLEANUP_BATCH,
                 metadata: MetaData | None = None, clock: Callable[[], float] = time.time,
                 deadline_clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self.horizon = Horizon(local_tx_timeout, commit_grace)
        if retention <= self.horizon.seconds:
            raise ValueError("retention must exceed local_tx_timeout + commit_grace (the broker asks at least that long)")
        if cleanup_interval <= 0 or cleanup_batch < 1:
            raise ValueError("cleanup_interval must be positive and cleanup_batch at least 1")
        self.retention = retention
        self.cleanup_interval = cleanup_interval
        self.cleanup_batch = cleanup_batch
        self.table: Table = transaction_records_table(metadata if metadata is not None else MetaData())
        self._clock = clock  # the records' times and the check-back's age of a half (the broker's clock is a wall clock too)
        self._deadline_clock = deadline_clock  # the local transaction's deadline
        self._sleep = sleep  # between two cleanups
        self._cleanup_task: asyncio.Task[None] | None = None

    # --- decisions -----------------------------------------------------------------
    def _now(self) -> datetime:
        return datetime.fromtimestamp(self._clock(), UTC)

    @staticmethod
    def _transaction_id(msg: Message | OutgoingMessage) -> str | None:
        return msg.properties.get("TRANSACTION_ID")

    def _answer(self, msg: Message, found: bool) -> LocalTransactionState:
        age = half_age_seconds(msg.born_timestamp, self._clock())
        answer = check_answer(found, age, self.horizon)
        log.info("check-back for transaction %s (age %.1fs, record %s): %s", self._transaction_id(msg), age, "found" if found else "missing", answer.value)
        return _STATES[answer]

    # --- the database work, written once: blocking functions of a connection or session, which the
    # blocking barrier calls as they are and the asyncio one through ``run_sync``.
    def _found(self, conn: Connection, txid: str) -> bool:
        return bool(conn.scalar(select(exists().where(self.table.c.txid == txid))))

    def _key_taken(self, conn: Connection, business_key: str) -> bool:
        return bool(conn.scalar(select(exists().where(self.table.c.business_key == business_key))))

    def _txid_of(self, conn: Connection, business_key: str) -> str | None:
        txid: str | None = conn.scalar(select(self.table.c.txid).where(self.table.c.business_key == business_key))
        return txid

    def _purge_batch(self, conn: Connection) -> int:
        """Delete at most ``cleanup_batch`` of the records older than ``retention``, oldest first; how many."""
        cutoff = self._now() - timedelta(seconds=self.retention)
        oldest = select(self.table.c.txid).where(self.table.c.created_at < cutoff).order_by(self.table.c.created_at).limit(self.cleanup_batch)
        deleted: int = conn.execute(delete(self.table).where(self.table.c.txid.in_(oldest))).rowcount
        return deleted

    def _record_all(self, session: Session, batch: Sequence[tuple[Work[Any], str]]) -> None:
        """Insert the records of ``batch`` (work, transaction id) in ``session``'s transaction, then check the deadlines (before the commit)."""
        now = self._now()
        session.execute(self.table.insert(), [{"txid": txid, "business_key": work.business_key, "created_at": now} for work, txid in batch])
        for work, _ in batch:
            work.check_deadline()

    async def _after_commit(self, work: Work[Any]) -> LocalTransactionState:
        """COMMIT, unless ``after_commit`` leaves the end to the check-back (UNKNOW).

        The record is committed by now, so ROLLBACK is never a right answer: anything but
        COMMIT is sent as UNKNOW, and the check-back commits it from the record.
        """
        if work.after_commit is None:
            return LocalTransactionState.COMMIT_MESSAGE
        answer = work.after_commit(work.value)
        if inspect.isawaitable(answer):
            answer = await answer
        return LocalTransactionState.COMMIT_MESSAGE if answer in (None, LocalTransactionState.COMMIT_MESSAGE) else LocalTransactionState.UNKNOW

    async def _send(self, producer: AsyncTransactionProducer, topic: str, message: OutgoingMessage | Body, business_key: str,
                    run: Callable[..., Any], after_commit: AfterCommit | None, also: Also = (),
                    options: SendOptions | None = None) -> Sent[Any]:
        """``send``, whichever session ``run`` takes: the producer sends the half and calls back ``execute_local_transaction``.

        ``also``: companions in the same transaction (one transaction id, so one record decides them all).
        """
        if getattr(producer, "listener", None) is not self:
            raise ValueError("the producer's listener is not this barrier: build it as AsyncTransactionProducer(url, group, barrier, ...)")
        work = self._work(business_key, run, after_commit)
        sent: Sent[Any] = self._outcome(await producer.send_in_transaction(topic, message, work, also=also, **(options or {})), work)
        return sent

    def _work(self, business_key: str, run: Callable[..., Any], after_commit: AfterCommit | None) -> Work[Any]:
        return Work(business_key, run, after_commit, deadline=self._deadline_clock() + self.horizon.local_tx_timeout,
                    clock=self._deadline_clock)

    def _txid_of_work(self, msg: OutgoingMessage, work: Any) -> str:
        """The transaction ``work`` is the local transaction of; a TypeError when it was not sent through ``send``."""
        txid = self._transaction_id(msg)
        if txid is None or not isinstance(work, Work):
            raise TypeError(f"send through {type(self).__name__}.send, not the producer's send_in_transaction")
        return txid

    @staticmethod
    def _outcome(result: TransactionSendResult, work: Work[R]) -> Sent[R]:
        """The send's value, or its failure raised (the transaction is rolled back by now)."""
        if result.local_error is not None:
            raise result.local_error
        if result.send_status is not SendStatus.SEND_OK:
            raise HalfNotDurable(f"the broker answered {result.send_status.value}; the message was rolled back and nothing ran")
        return Sent(work.value, result)

    # --- periodic cleanup ----------------------------------------------------------
    async def purge(self) -> int:  # pragma: no cover - each barrier has its own
        """Delete the records older than ``retention``; how many."""
        raise NotImplementedError

    async def start(self) -> None:
        """Delete expired records now, then every ``cleanup_interval`` seconds until ``close``."""
        if self._cleanup_task is not None:
            return
        await self._purge_logged()
        self._cleanup_task = asyncio.get_running_loop().create_task(self._cleanup_loop(), name="halfmq-barrier-cleanup")

    async def close(self) -> None:
        """Stop the periodic cleanup (the records stay)."""
        task, self._cleanup_task = self._cleanup_task, None
        await cancel(task)

    async def _cleanup_loop(self) -> None:
        while True:
            await self._sleep(self.cleanup_interval)
            await self._purge_logged()

    async def _purge_logged(self) -> None:
        try:
            deleted = await self.purge()
        except Exception:
            log.exception("deleting expired transaction records failed; will try again")
            return
        if deleted:
            log.info("deleted %d transaction records older than %.0fs", deleted, self.retention)
