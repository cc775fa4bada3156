"""The transactional inbox: a consumer's writes and its record of the message commit together, so each message counts once.

Delivery is at-least-once: a consumer that dies after its database commit and before its ack
gets the message again, and a message whose invisibility ran out can be with two consumers at
once. The inbox is one table, ``halfmq_inbox``, with a row per (consumer group, key). A handler
run through the inbox first claims the message's row with ``INSERT ... ON CONFLICT DO NOTHING
RETURNING`` *in the handler's own transaction*: a row inserted means the message is new and the
handler runs; no row means it was handled before (or is being handled right now by another
process, whose insert holds the unique key until it commits or rolls back) and the handler is
skipped. The handler's writes and the row then commit together, and the consumer acks only
after that commit has returned; a handler that raises rolls both back and the consumer nacks.
No lock is held across the handler beyond the unique key itself: the unique row decides.

The key is the message's UNIQ_KEY (the producer's id, the same on every retried send), else its
broker msg_id; or a business key named by the user (``key="order_id"``), read from the JSON body,
so two different messages about one order count once. Rows older than ``retention`` are purged in
bounded batches; the default, 7 days, is longer than the broker's longest redelivery window (about
4 h 54 min with the default retry ladder: docs/decisions/024-inbox.md).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Generator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeAlias

import msgspec
from sqlalchemy import Column, DateTime, Engine, Index, MetaData, String, Table, and_, delete, select, tuple_
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.sql import Delete, Insert

from halfmq.client.loop_thread import shared_loop
from halfmq.client.messages import UNIQ_KEY, message_body_bytes
from halfmq.client.step_drivers import run_steps, run_steps_async
from halfmq.wire import Message

if TYPE_CHECKING:  # at run time only for an asyncio bind: SQLAlchemy 2.1's asyncio needs greenlet, which sync users lack
    from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

__all__ = ["DEFAULT_RETENTION", "INBOX_TABLE", "Inbox", "InboxKeyMissing", "InboxStats", "create_inbox_table", "drop_inbox_table", "inbox_key", "inbox_table"]

log = logging.getLogger(__name__)

INBOX_TABLE = "halfmq_inbox"
DEFAULT_RETENTION = timedelta(days=7)
KEY_LENGTH = 128

Bind: TypeAlias = "Engine | sessionmaker[Session] | AsyncEngine | async_sessionmaker[AsyncSession]"


class InboxKeyMissing(ValueError):
    """The message lacks the business key the inbox is keyed by: it can never be deduplicated, so it is refused (nack, then DLQ)."""

    code = "INBOX_KEY_MISSING"
    retriable = False


def inbox_table(metadata: MetaData, name: str = INBOX_TABLE) -> Table:
    """The inbox table in ``metadata``: one row per (consumer group, key) handled, with when, for the purge."""
    return Table(name, metadata, *_columns(), Index(f"ix_{name}_handled_at", "consumer_group", "handled_at"))


def _columns() -> list[Column[Any]]:
    return [
        Column("consumer_group", String(KEY_LENGTH), primary_key=True),
        Column("key", String(KEY_LENGTH), primary_key=True),
        Column("msg_id", String(KEY_LENGTH), nullable=False),
        Column("handled_at", DateTime(timezone=True), nullable=False),
    ]


def create_inbox_table(op: Any, name: str = INBOX_TABLE) -> None:
    """Create the inbox table from an Alembic migration: ``create_inbox_table(op)`` in ``upgrade()``."""
    op.create_table(name, *_columns())
    op.create_index(f"ix_{name}_handled_at", name, ["consumer_group", "handled_at"])


def drop_inbox_table(op: Any, name: str = INBOX_TABLE) -> None:
    """Drop the inbox table from an Alembic migration's ``downgrade()``."""
    op.drop_index(f"ix_{name}_handled_at", table_name=name)
    op.drop_table(name)


def inbox_key(message: Message, key: str | None = None) -> str:
    """The key a message is deduplicated by: the named JSON field, else its UNIQ_KEY, else its msg_id."""
    if key is None:
        return str(message.properties.get(UNIQ_KEY) or message.msg_id)
    try:
        body = msgspec.json.decode(message_body_bytes(message))
    except (msgspec.DecodeError, ValueError):
        raise InboxKeyMissing(f"message {message.msg_id}: body is not JSON, so it has no {key!r}") from None
    value = body.get(key) if isinstance(body, dict) else None
    if isinstance(value, bool) or not isinstance(value, (str, int)) or value == "":
        raise InboxKeyMissing(f"message {message.msg_id}: no {key!r} (a non-empty string or integer) in its body")
    text = str(value)
    if len(text) > KEY_LENGTH:
        raise InboxKeyMissing(f"message {message.msg_id}: {key!r} is longer than {KEY_LENGTH} characters")
    return text


@dataclass
class InboxStats:
    """What this process's inbox did: messages handled, and deliveries skipped as already handled."""

    handled: int = 0
    skipped: int = 0


def _outcomes(keyed: Sequence[tuple[str, str]], inserted: set[str]) -> list[bool]:
    """Per pair, whether its row was inserted now: only the first of a key repeated in the batch is new."""
    outcomes = []
    for key, _ in keyed:
        outcomes.append(key in inserted)
        inserted.discard(key)
    return outcomes


class Inbox:
    """Run handlers exactly once per key for one consumer group.

    ``bind`` is an Engine or sessionmaker for ``handler`` (the blocking ``Consumer``, handlers on threads), an AsyncEngine
    or async_sessionmaker for ``async_handler`` (the ``AsyncConsumer``; a blocking handler there would
    stall its event loop). ``claim`` / ``claim_many`` / ``claim_keys`` work inside any transaction the
    caller opened, e.g. one batched by a group commit (the credit service's).
    """

    def __init__(self, bind: Bind, group: str, *, key: str | None = None, retention: timedelta = DEFAULT_RETENTION,
                 table: Table | None = None, purge_interval: float = 3600.0, purge_batch: int = 1000,
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC), sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        if retention <= timedelta(0):
            raise ValueError("retention must be positive")
        self.group = group
        self.key = key
        self.retention = retention
        self.table = table if table is not None else inbox_table(MetaData())
        self.stats = InboxStats()
        self._clock = clock
        self._sleep = sleep  # between two passes of ``purge_every``
        self._purge_interval = purge_interval
        self._purge_batch = purge_batch
        self._next_purge = time.monotonic() + purge_interval
        self._lock = threading.Lock()  # handlers run on several threads
        self._purging: set[Future[None]] = set()
        self._claim_statements: dict[str, Insert] = {}
        if isinstance(bind, Engine):
            bind = sessionmaker(bind)
        self._sessions: sessionmaker[Session] | None = bind if isinstance(bind, sessionmaker) else None
        self._async_sessions: async_sessionmaker[AsyncSession] | None = None
        if self._sessions is None:
            from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker

            if isinstance(bind, AsyncEngine):
                bind = async_sessionmaker(bind)
            if not isinstance(bind, async_sessionmaker):
                raise TypeError(f"Inbox needs an Engine, sessionmaker, AsyncEngine or async_sessionmaker, not {type(bind).__name__}")
            self._async_sessions = bind

    def key_of(self, message: Message) -> str:
        """The key this inbox deduplicates ``message`` by (``inbox_key`` with its ``key``)."""
        return inbox_key(message, self.key)

    # -- claiming, inside the caller's transaction ------------------------------------------

    def claim(self, session: Session, message: Message) -> bool:
        """Insert the message's row in ``session``'s transaction: True if it is new (run the handler), False if handled already."""
        [claimed] = self.claim_many(session, [message])
        return claimed

    def claim_many(self, session: Session, messages: Sequence[Message]) -> list[bool]:
        """``claim`` for several messages in one statement; a key repeated in ``messages`` is new at most once, the first time."""
        return self.claim_keys(session, [(self.key_of(m), m.msg_id) for m in messages])

    def claim_keys(self, session: Session, keyed: Sequence[tuple[str, str]]) -> list[bool]:
        """``claim_many`` for (key, msg_id) pairs the caller has already worked out (e.g. from a parsed body)."""
        claim = self._claim(session.get_bind().dialect.name, keyed)
        return _outcomes(keyed, set() if claim is None else set(session.scalars(*claim)))

    async def claim_keys_async(self, session: AsyncSession, keyed: Sequence[tuple[str, str]]) -> list[bool]:
        """``claim_keys`` in an ``AsyncSession``'s transaction."""
        claim = self._claim(session.get_bind().dialect.name, keyed)
        return _outcomes(keyed, set() if claim is None else set(await session.scalars(*claim)))

    def _claim(self, dialect: str, keyed: Sequence[tuple[str, str]]) -> tuple[Insert, list[dict[str, Any]]] | None:
        """The claim statement and its rows (one per distinct key, sorted), or None for no keys.

        The statement is one single-row ``INSERT ... ON CONFLICT DO NOTHING RETURNING key``, built
        once per dialect and executed for all the rows: SQLAlchemy's "insertmanyvalues" sends it
        as multi-row VALUES, and its compiled form is cached. A statement carrying the batch's
        values was compiled again for every batch (half the claim's CPU in a credit service
        profile). Which keys come back is all that is read, so the rows' order does not matter
        to the outcome; they are sorted so that two transactions claiming overlapping keys take
        them in the same order (no deadlock).
        """
        if dialect not in ("postgresql", "sqlite"):
            raise NotImplementedError(f"the inbox supports PostgreSQL and SQLite, not {dialect}")
        rows: dict[str, str] = {}
        for key, msg_id in keyed:
            rows.setdefault(key, msg_id)
        if not rows:
            return None
        now = self._clock()
        statement = self._claim_statements.get(dialect)
        if statement is None:
            insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
            t = self.table
            statement = self._claim_statements[dialect] = (
                insert(t).on_conflict_do_nothing(index_elements=[t.c.consumer_group, t.c.key]).returning(t.c.key))
        return statement, [{"consumer_group": self.group, "key": k, "msg_id": m, "handled_at": now} for k, m in sorted(rows.items())]

    # -- handlers for the consumers ---------------------------------------------------------

    def handler(self, fn: Callable[[Session, Message], Any]) -> Callable[[Message], bool]:
        """A ``Consumer`` handler running ``fn(session, message)`` once per key; True if it ran, False if skipped.

        ``fn``'s writes and the inbox row commit when it returns; the consumer acks after that.
        If ``fn`` raises, both are rolled back and the exception reaches the consumer: a nack.
        """
        sessions = self._sessions
        if sessions is None:
            raise TypeError("Inbox.handler needs an Engine or a sessionmaker; use async_handler with an AsyncEngine")

        def handle(message: Message) -> bool:
            keyed = [(self.key_of(message), message.msg_id)]  # a missing business key fails before any transaction
            with sessions.begin() as session:
                if not self.claim_keys(session, keyed)[0]:
                    return self._counted(False)
                fn(session, message)
            return self._counted(True)

        return handle

    def async_handler(self, fn: Callable[[AsyncSession, Message], Awaitable[Any]]) -> Callable[[Message], Awaitable[bool]]:
        """An ``AsyncConsumer`` handler: ``handler`` for a coroutine ``fn(session, message)`` on an AsyncSession."""
        sessions = self._async_sessions
        if sessions is None:
            raise TypeError("Inbox.async_handler needs an AsyncEngine or an async_sessionmaker; use handler with an Engine")

        async def handle(message: Message) -> bool:
            keyed = [(self.key_of(message), message.msg_id)]
            async with sessions.begin() as session:
                if not (await self.claim_keys_async(session, keyed))[0]:
                    return self._counted(False)
                await fn(session, message)
            return self._counted(True)

        return handle

    # -- retention --------------------------------------------------------------------------

    def _cutoff(self) -> datetime:
        return self._clock() - self.retention

    def _purge_statement(self) -> Delete:
        t = self.table
        old = (select(t.c.consumer_group, t.c.key)
               .where(and_(t.c.consumer_group == self.group, t.c.handled_at < self._cutoff()))
               .limit(self._purge_batch))
        return delete(t).where(tuple_(t.c.consumer_group, t.c.key).in_(old))

    def purge(self, *, max_batches: int | None = None) -> int:
        """Delete this group's rows older than the retention, ``purge_batch`` rows per transaction; how many went."""
        sessions = self._sessions
        if sessions is None:
            raise TypeError("Inbox.purge needs an Engine or a sessionmaker; use purge_async")

        def delete_batch(statement: Delete) -> int:
            with sessions.begin() as session:
                return int(session.execute(statement).rowcount or 0)  # type: ignore[attr-defined]

        return run_steps(self._purge_steps(max_batches), delete_batch)

    async def purge_async(self, *, max_batches: int | None = None) -> int:
        """``purge`` on the asyncio engine."""
        sessions = self._async_sessions
        if sessions is None:
            raise TypeError("Inbox.purge_async needs an AsyncEngine or an async_sessionmaker; use purge")

        async def delete_batch(statement: Delete) -> int:
            async with sessions.begin() as session:
                return int((await session.execute(statement)).rowcount or 0)  # type: ignore[attr-defined]

        return await run_steps_async(self._purge_steps(max_batches), delete_batch)

    def _purge_steps(self, max_batches: int | None) -> Generator[Delete, int, int]:
        """The purge as steps (one DELETE per transaction, each answered by its row count), for either driver."""
        removed, batches = 0, 0
        while max_batches is None or batches < max_batches:
            count = yield self._purge_statement()
            removed, batches = removed + count, batches + 1
            if count < self._purge_batch:
                break
        return removed

    async def purge_every(self, seconds: float) -> None:
        """Purge now and every ``seconds`` until cancelled: a task for consumers that claim in their own transactions.

        The handlers purge as they go; code calling ``claim_keys`` (e.g. from a group commit) runs this beside its consumer.
        """
        while True:
            await self._purge_quietly()
            await self._sleep(seconds)

    async def _purge_quietly(self) -> None:
        try:
            removed = await (self.purge_async() if self._async_sessions else asyncio.to_thread(self.purge))
            if removed:
                log.info("inbox %s: purged %d rows older than %s", self.group, removed, self.retention)
        except Exception as exc:  # noqa: BLE001 - the next purge tries again; consuming is unaffected
            log.warning("inbox %s: purge failed: %s", self.group, exc)

    def _counted(self, handled: bool) -> bool:
        """Count a delivery, handled or skipped; after a handled one, purge in the background when due (the ack must not wait)."""
        now = time.monotonic()
        with self._lock:
            self.stats.handled += handled
            self.stats.skipped += not handled
            due = handled and now >= self._next_purge  # once per purge_interval, for one of the handlers
            if due:
                self._next_purge = now + self._purge_interval
        if due:  # a blocking handler runs on a worker thread: its purge runs on the SDK's loop
            loop = asyncio.get_running_loop() if self._async_sessions else shared_loop().loop
            purge = asyncio.run_coroutine_threadsafe(self._purge_quietly(), loop)
            self._purging.add(purge)  # the loop keeps only a weak reference to a task
            purge.add_done_callback(self._purging.discard)
        return handled
