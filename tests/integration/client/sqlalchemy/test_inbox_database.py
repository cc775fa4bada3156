"""The inbox's claim, async handler and purge on a real PostgreSQL as on SQLite (no broker needed here)."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import Engine, create_engine, event, func, select
from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine
from sqlalchemy.orm import Session

from halfmq.client import UNIQ_KEY, Message
from halfmq.client.sqlalchemy.inbox import Inbox
from tests.support.inbox_consumer import EFFECTS, INBOX, metadata


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/inbox.db"
        return
    cluster = request.getfixturevalue("postgres")
    name = f"t_{uuid.uuid4().hex[:12]}"
    yield cluster.create_database(name)
    cluster.drop_database(name)


@pytest.fixture
def engine(database_url: str) -> Iterator[Engine]:
    engine = create_engine(database_url, connect_args={"timeout": 30} if database_url.startswith("sqlite") else {})
    metadata.create_all(engine)
    yield engine
    engine.dispose()


def message(uniq_key: str) -> Message:
    return Message(msg_id=uuid.uuid4().hex, topic="T", queue_id=0, queue_offset=0, commit_log_offset=0,
                   born_timestamp=0, store_timestamp=0, body="{}", properties={UNIQ_KEY: uniq_key})


def count(engine: Engine, table: object) -> int:
    with engine.connect() as conn:
        return int(conn.scalar(select(func.count()).select_from(table)) or 0)  # type: ignore[arg-type]


def test_six_transactions_claiming_one_key_at_once_let_exactly_one_handler_run(engine: Engine) -> None:
    inbox = Inbox(engine, "g")
    start, results, errors = threading.Barrier(6), [], []

    def deliver() -> None:
        start.wait(10)
        try:
            with Session(engine) as session, session.begin():
                claimed = inbox.claim(session, message("same"))
                if claimed:
                    session.execute(EFFECTS.insert().values(key="same", msg_id="m"))
                    time.sleep(0.3)  # hold the claim open while the others arrive
                results.append(claimed)
        except Exception as exc:  # noqa: BLE001
            errors.append(repr(exc))

    threads = [threading.Thread(target=deliver) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == [] and sorted(results) == [False] * 5 + [True]
    assert count(engine, EFFECTS) == 1 and count(engine, INBOX) == 1


def test_a_batch_claim_is_new_once_per_key_and_its_statement_is_one_cached_insert(engine: Engine) -> None:
    """Claimed keys, a key twice in the batch and batches of other sizes: one INSERT each, compiled once."""
    inbox = Inbox(engine, "g")
    executed: list[str] = []
    event.listen(engine, "before_cursor_execute", lambda *args: executed.append(args[2]))
    with Session(engine) as session, session.begin():
        assert inbox.claim_keys(session, [("a", "m1"), ("b", "m2")]) == [True, True]
    with Session(engine) as session, session.begin():
        batch = [("c", "m3"), ("a", "m4"), ("c", "m5"), *((f"k{i:03}", f"n{i}") for i in range(150)), ("b", "m6")]
        assert inbox.claim_keys(session, batch) == [True, False, False, *[True] * 150, False]
    with Session(engine) as session, session.begin():
        assert inbox.claim_many(session, [message("a"), message("z")]) == [False, True]
    with Session(engine) as session, session.begin():
        assert inbox.claim_keys(session, []) == []
    claims = [sql for sql in executed if "halfmq_inbox" in sql and sql.lstrip().upper().startswith("INSERT")]
    assert len(claims) == 3, "one statement per claimed batch"
    assert count(engine, INBOX) == 154
    with engine.connect() as conn:
        rows = dict(conn.execute(select(INBOX.c.key, INBOX.c.msg_id)).all())  # type: ignore[call-overload]
    assert (rows["a"], rows["b"], rows["c"]) == ("m1", "m2", "m3"), "the first claim of a key keeps its row"
    assert len(inbox._claim_statements) == 1, "built once for the dialect"


async def test_the_async_handler_runs_once_and_rolls_back_on_failure(database_url: str, engine: Engine) -> None:
    url = database_url.replace("sqlite://", "sqlite+aiosqlite://")
    async_engine = create_async_engine(url)

    async def write(session: AsyncSession, msg: Message) -> None:
        await session.execute(EFFECTS.insert().values(key=msg.properties[UNIQ_KEY], msg_id=msg.msg_id))
        if msg.properties[UNIQ_KEY] == "bad":
            raise RuntimeError("boom")

    handle = Inbox(async_engine, "g").async_handler(write)
    try:
        assert await handle(message("a")) is True
        assert await handle(message("a")) is False
        with pytest.raises(RuntimeError):
            await handle(message("bad"))
    finally:
        await async_engine.dispose()
    assert count(engine, EFFECTS) == 1 and count(engine, INBOX) == 1


def test_the_purge_deletes_old_rows_in_batches(engine: Engine) -> None:
    now = [datetime(2026, 11, 1, tzinfo=UTC)]
    inbox = Inbox(engine, "g", purge_batch=4, clock=lambda: now[0])
    with Session(engine) as session, session.begin():
        inbox.claim_many(session, [message(f"old-{i}") for i in range(10)])
    now[0] += timedelta(days=7, seconds=1)
    with Session(engine) as session, session.begin():
        inbox.claim(session, message("new"))
    assert inbox.purge() == 10 and count(engine, INBOX) == 1
