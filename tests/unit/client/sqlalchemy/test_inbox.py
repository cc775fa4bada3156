"""The inbox on SQLite: which key a message is counted by, claiming, the handlers' one transaction, and the purge."""

from __future__ import annotations

import asyncio
import concurrent.futures
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
from sqlalchemy import Column, Engine, Integer, MetaData, String, Table, create_engine, func, select
from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine
from sqlalchemy.orm import Session

from halfmq.client import UNIQ_KEY, Message
from halfmq.client.sqlalchemy.inbox import DEFAULT_RETENTION, Inbox, InboxKeyMissing, inbox_key, inbox_table
from tests.support.fake_clock import FakeSleep

metadata = MetaData()
INBOX = inbox_table(metadata)
EFFECTS = Table("effects", metadata, Column("id", Integer, primary_key=True, autoincrement=True), Column("key", String(64)))


def message(body: Any = None, *, uniq_key: str | None = None, msg_id: str | None = None) -> Message:
    text = body if isinstance(body, str) else orjson.dumps(body if body is not None else {}).decode()
    return Message(msg_id=msg_id or uuid.uuid4().hex, topic="T", queue_id=0, queue_offset=0, commit_log_offset=0,
                   born_timestamp=0, store_timestamp=0, body=text, properties={UNIQ_KEY: uniq_key} if uniq_key else {})


@pytest.fixture
def engine(tmp_path: Path) -> Engine:
    engine = create_engine(f"sqlite:///{tmp_path}/inbox.db")
    metadata.create_all(engine)
    yield engine
    engine.dispose()


def effects(engine: Engine) -> list[str]:
    with engine.connect() as conn:
        return list(conn.scalars(select(EFFECTS.c.key).order_by(EFFECTS.c.id)))


def inbox_rows(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.scalar(select(func.count()).select_from(INBOX)) or 0)


def record(session: Session, msg: Message) -> None:
    session.execute(EFFECTS.insert().values(key=msg.msg_id))


def test_the_key_is_the_uniq_key_else_the_msg_id_else_the_named_body_field() -> None:
    assert inbox_key(message(uniq_key="U1", msg_id="m1")) == "U1"
    assert inbox_key(message(msg_id="m1")) == "m1"
    assert inbox_key(message({"order_id": "o-7"}, uniq_key="U1"), "order_id") == "o-7"
    assert inbox_key(message({"order_id": 42}), "order_id") == "42"


@pytest.mark.parametrize("body", [{"user_id": "u"}, {"order_id": ""}, {"order_id": None}, {"order_id": True},
                                  {"order_id": ["o"]}, {"order_id": "x" * 129}, ["order_id"], "not json"])
def test_a_message_without_the_named_business_key_is_refused_with_a_code(body: Any) -> None:
    with pytest.raises(InboxKeyMissing) as refused:
        inbox_key(message(body), "order_id")
    assert refused.value.code == "INBOX_KEY_MISSING" and not refused.value.retriable


def test_a_key_is_claimed_once_per_group_and_each_group_claims_it_for_itself(engine: Engine) -> None:
    a, b = Inbox(engine, "group-a"), Inbox(engine, "group-b")
    first, again = message(uniq_key="U1"), message(uniq_key="U1")
    with Session(engine) as session, session.begin():
        assert a.claim(session, first) is True
    with Session(engine) as session, session.begin():
        assert a.claim(session, again) is False
        assert b.claim(session, again) is True
    assert inbox_rows(engine) == 2


def test_a_claim_rolled_back_leaves_the_key_free(engine: Engine) -> None:
    inbox = Inbox(engine, "g")
    with Session(engine) as session:
        with session.begin():
            assert inbox.claim(session, message(uniq_key="U1"))
            session.rollback()
    with Session(engine) as session, session.begin():
        assert inbox.claim(session, message(uniq_key="U1")) is True


def test_claim_many_is_new_only_for_the_first_of_a_repeated_key_and_not_for_keys_handled_before(engine: Engine) -> None:
    inbox = Inbox(engine, "g", key="order_id")
    with Session(engine) as session, session.begin():
        inbox.claim(session, message({"order_id": "old"}))
    batch = [message({"order_id": k}) for k in ("b1", "old", "b2", "b1")]
    with Session(engine) as session, session.begin():
        assert inbox.claim_many(session, batch) == [True, False, True, False]
        assert inbox.claim_many(session, []) == []
    assert inbox_rows(engine) == 3


def test_the_handler_commits_its_writes_with_the_inbox_row_and_skips_a_redelivery(engine: Engine) -> None:
    inbox = Inbox(engine, "g")
    handle = inbox.handler(record)
    msg = message(uniq_key="U1", msg_id="m1")
    assert handle(msg) is True
    assert handle(msg) is False
    assert handle(message(uniq_key="U1", msg_id="m1-resent")) is False
    assert effects(engine) == ["m1"] and inbox_rows(engine) == 1
    assert (inbox.stats.handled, inbox.stats.skipped) == (1, 2)


def test_a_handler_that_raises_writes_nothing_and_the_next_delivery_runs_it(engine: Engine) -> None:
    fail = [True]

    def flaky(session: Session, msg: Message) -> None:
        record(session, msg)
        if fail[0]:
            raise RuntimeError("boom")

    handle = Inbox(engine, "g").handler(flaky)
    msg = message(uniq_key="U1")
    with pytest.raises(RuntimeError):
        handle(msg)
    assert effects(engine) == [] and inbox_rows(engine) == 0
    fail[0] = False
    assert handle(msg) is True and len(effects(engine)) == 1


def test_business_key_dedup_counts_two_different_messages_about_one_order_once(engine: Engine) -> None:
    handle = Inbox(engine, "g", key="order_id").handler(record)
    assert handle(message({"order_id": "o1"}, uniq_key="A")) is True
    assert handle(message({"order_id": "o1"}, uniq_key="B")) is False
    with pytest.raises(InboxKeyMissing):
        handle(message({"user_id": "u"}))
    assert len(effects(engine)) == 1


async def test_the_async_handler_does_the_same_on_an_asyncio_session(tmp_path: Path) -> None:
    sync_engine = create_engine(f"sqlite:///{tmp_path}/a.db")
    metadata.create_all(sync_engine)
    engine = create_async_engine(f"sqlite+aiosqlite:///{tmp_path}/a.db")

    async def arecord(session: AsyncSession, msg: Message) -> None:
        await session.execute(EFFECTS.insert().values(key=msg.msg_id))
        if msg.body == "fail":
            raise RuntimeError("boom")

    inbox = Inbox(engine, "g")
    handle = inbox.async_handler(arecord)
    msg = message(uniq_key="U1", msg_id="m1")
    assert await handle(msg) is True
    assert await handle(msg) is False
    with pytest.raises(RuntimeError):
        await handle(message("fail", uniq_key="U2"))
    assert effects(sync_engine) == ["m1"] and inbox_rows(sync_engine) == 1
    with pytest.raises(TypeError):
        inbox.handler(record)
    await engine.dispose()
    sync_engine.dispose()


def test_the_purge_removes_only_this_groups_rows_older_than_the_retention_in_bounded_batches(engine: Engine) -> None:
    now = [datetime(2026, 11, 1, tzinfo=UTC)]
    inbox = Inbox(engine, "g", purge_batch=3, clock=lambda: now[0])
    other = Inbox(engine, "other", clock=lambda: now[0])
    with Session(engine) as session, session.begin():
        inbox.claim_many(session, [message(uniq_key=f"old-{i}") for i in range(7)])
        other.claim(session, message(uniq_key="old-other"))
    now[0] += timedelta(days=6)
    with Session(engine) as session, session.begin():
        inbox.claim(session, message(uniq_key="recent"))
    now[0] += timedelta(days=1, seconds=1)
    assert inbox.purge(max_batches=1) == 3
    assert inbox.purge() == 4
    assert inbox.purge() == 0
    assert inbox_rows(engine) == 2  # "recent" and the other group's row
    assert DEFAULT_RETENTION == timedelta(days=7)


async def test_purge_every_purges_at_once_and_again_until_cancelled(engine: Engine) -> None:
    now = [datetime(2026, 11, 1, tzinfo=UTC)]
    sleep = FakeSleep()
    inbox = Inbox(engine, "g", clock=lambda: now[0], sleep=sleep)
    with Session(engine) as session, session.begin():
        inbox.claim(session, message(uniq_key="old"))
    now[0] += timedelta(days=8)
    task = asyncio.get_running_loop().create_task(inbox.purge_every(0.05))
    await sleep.until_sleeping()  # the first purge is over
    assert inbox_rows(engine) == 0
    with Session(engine) as session, session.begin():
        inbox.claim(session, message(uniq_key="later"))
    now[0] += timedelta(days=8)
    sleep.wake()
    await sleep.until_sleeping()  # and the next
    task.cancel()
    assert inbox_rows(engine) == 0
    assert sleep.asked == [0.05, 0.05]


def test_the_handler_purges_old_rows_in_the_background_once_the_interval_has_passed(engine: Engine) -> None:
    now = [datetime(2026, 11, 1, tzinfo=UTC)]
    inbox = Inbox(engine, "g", purge_interval=0.0, clock=lambda: now[0])
    handle = inbox.handler(record)
    assert handle(message(uniq_key="old"))
    now[0] += timedelta(days=8)
    assert handle(message(uniq_key="new"))
    concurrent.futures.wait(list(inbox._purging), timeout=10)  # the background purges (on the SDK's loop); a hang guard
    with engine.connect() as conn:
        assert list(conn.scalars(select(INBOX.c.key))) == ["new"]
