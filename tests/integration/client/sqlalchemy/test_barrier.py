"""The barrier against real broker processes, on SQLite and PostgreSQL, with the sync and asyncio engines.

Each outcome of a transactional send: the local commit whose end is lost is committed by
check-back; a local failure is rolled back and never seen; a service killed -9 between its local
commit and its end is committed by check-back (answered by a fresh process of the same group); a
check that arrives while the local transaction is held open is answered UNKNOWN and the next one
COMMIT; concurrent sends with one business key commit exactly one. The check app is served for
real (uvicorn on the test's loop), so check-backs travel over HTTP.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from sqlalchemy import Column, MetaData, String, Table, create_engine, func, select
from sqlalchemy.ext.asyncio import create_async_engine

from halfmq.client import AsyncTransactionProducer, LocalTransactionState, Message, OutgoingMessage, Producer, message_json, outgoing
from halfmq.client.sqlalchemy.async_barrier import AsyncTransactionBarrier
from halfmq.client.sqlalchemy.barrier import TransactionBarrier
from halfmq.client.sqlalchemy.barrier_base import DuplicateBusinessKey
from halfmq.client.sqlalchemy.records import TABLE_NAME, create_transaction_records
from halfmq.testing import loopback_socket
from tests.conftest import TEST_BROKER_ENV
from tests.support.processes import BrokerProcess

pytestmark = pytest.mark.slow

FAST_CHECKS = {
    "HALFMQ_BROKER_TRANSACTION_TIMEOUT": "0.5",
    "HALFMQ_BROKER_TRANSACTION_CHECK_INTERVAL": "0.3",
    "HALFMQ_BROKER_TRANSACTION_CHECK_MAX": "60",
    "HALFMQ_BROKER_PRODUCER_EXPIRY": "1.5",
}
# Horizon 4 s: well past a held transaction's first check (about 0.8 s), well within the broker's checks (18 s).
SETTINGS = {"local_tx_timeout": 3.0, "commit_grace": 1.0, "retention": 3600.0}
CHILD = Path(__file__).with_name("barrier_child.py")

metadata = MetaData()
items = Table("items", metadata, Column("id", String(64), primary_key=True))


@pytest.fixture(scope="module")
def tx_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    root = tmp_path_factory.mktemp("barrier-broker")
    proc = BrokerProcess(root / "data", root, {**TEST_BROKER_ENV, **FAST_CHECKS}).start()
    yield proc
    proc.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/barrier.db"
        return
    cluster = request.getfixturevalue("postgres")
    name = f"b_{uuid.uuid4().hex[:12]}"
    yield cluster.create_database(name)
    cluster.drop_database(name)


@pytest.fixture(params=["sync", "async"])
def flavour(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def async_url(url: str) -> str:
    return url.replace("sqlite://", "sqlite+aiosqlite://", 1)  # psycopg 3 is sync and async under one name


@dataclass
class Service:
    """A barrier, its producer and its served check app, as a service has them."""

    barrier: TransactionBarrier | AsyncTransactionBarrier
    producer: AsyncTransactionProducer
    topic: str
    answers: list[LocalTransactionState] = field(default_factory=list)

    async def send(self, key: str, *, fail: bool = False, hold: threading.Event | None = None, end_lost: bool = False,
                   also: Any = (), **options: Any) -> Any:
        def body(session: Any) -> str:
            if hold is not None:
                assert hold.wait(20), "never released"
            if fail:
                raise ValueError("the local transaction failed")
            return key

        after = (lambda _value: LocalTransactionState.UNKNOW) if end_lost else None
        if isinstance(self.barrier, TransactionBarrier):
            def run(session: Any) -> str:
                session.execute(items.insert().values(id=key))
                return body(session)
            return await self.barrier.send(self.producer, self.topic, {"id": key}, key, run, after_commit=after, also=also, **options)

        async def arun(session: Any) -> str:
            await session.execute(items.insert().values(id=key))
            return await asyncio.to_thread(body, session)
        return await self.barrier.send(self.producer, self.topic, {"id": key}, key, arun, after_commit=after, also=also, **options)


@asynccontextmanager
async def service(broker_url: str, database_url: str, flavour: str, group: str, topic: str) -> AsyncIterator[Service]:
    engine = create_engine(database_url)
    with engine.begin() as conn:
        metadata.create_all(conn)
        create_transaction_records(conn)
    barrier: TransactionBarrier | AsyncTransactionBarrier
    async_engine = None
    if flavour == "sync":
        barrier = TransactionBarrier(engine, **SETTINGS)
    else:
        async_engine = create_async_engine(async_url(database_url))
        barrier = AsyncTransactionBarrier(async_engine, **SETTINGS)
    sock = loopback_socket()
    check_url = f"http://127.0.0.1:{sock.getsockname()[1]}/halfmq/check"
    producer = AsyncTransactionProducer(broker_url, group, barrier, check_url=check_url, heartbeat_interval=0.3)
    svc = Service(barrier, producer, topic)
    check_app = producer.check_app()
    original = barrier.check_local_transaction

    async def recording(msg: Message) -> LocalTransactionState:  # every answer, to see UNKNOWN then COMMIT
        answer = original(msg)
        if asyncio.iscoroutine(answer):
            answer = await answer
        else:
            answer = await asyncio.to_thread(lambda: answer)
        svc.answers.append(answer)
        return answer

    if isinstance(barrier, TransactionBarrier):
        # the sync check runs in a worker thread; keep it there
        def sync_recording(msg: Message) -> LocalTransactionState:
            answer = original(msg)
            svc.answers.append(answer)
            return answer
        check_app.listener = type("L", (), {"check_local_transaction": staticmethod(sync_recording)})()
    else:
        check_app.listener = type("L", (), {"check_local_transaction": staticmethod(recording)})()
    server = uvicorn.Server(uvicorn.Config(check_app, lifespan="off", log_level="warning"))
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    await eventually(lambda: server.started)
    await producer.start()
    try:
        yield svc
    finally:
        await producer.close()
        server.should_exit = True
        await serving
        sock.close()
        if async_engine is not None:
            await async_engine.dispose()
        engine.dispose()


def topic_bodies(broker_url: str, topic: str) -> list[Any]:
    return [message_json(m) for m in topic_messages(broker_url, topic)]


def topic_messages(broker_url: str, topic: str) -> list[Message]:
    out: list[Message] = []
    with Producer(broker_url) as reader:
        for queue in reader.get_topic(topic).queues:
            offset = queue.min_offset
            while offset < queue.max_offset:
                page = reader.read(topic, queue.queue_id, offset, max=256)
                out.extend(page.messages)
                offset = page.next_offset
    return out


def rows(database_url: str, key: str) -> tuple[int, int]:
    """(business rows, transaction records) for ``key``."""
    engine = create_engine(database_url)
    try:
        with engine.connect() as conn:
            records = Table(TABLE_NAME, MetaData(), autoload_with=conn)
            found = conn.scalar(select(func.count()).select_from(items).where(items.c.id == key)) or 0
            recorded = conn.scalar(select(func.count()).select_from(records).where(records.c.business_key == key)) or 0
            return found, recorded
    finally:
        engine.dispose()


async def eventually(predicate: Callable[[], object], within: float = 20.0, interval: float = 0.05) -> None:
    """Poll ``predicate`` on the loop until it holds (the check app answers on this same loop)."""
    for _ in range(int(within / interval)):
        if predicate():
            return
        await asyncio.sleep(interval)


async def settled(producer: AsyncTransactionProducer, txid: str, within: float = 20.0) -> str:
    state = "pending"
    for _ in range(int(within / 0.1)):
        state = str((await producer.get_transaction(txid))["state"])
        if state != "pending":
            break
        await asyncio.sleep(0.1)
    return state


def names() -> tuple[str, str]:
    tag = uuid.uuid4().hex[:10]
    return f"barrier_{tag}", f"BARRIER_{tag}"


async def test_a_committed_send_delivers_its_message_once(tx_broker: BrokerProcess, database_url: str, flavour: str) -> None:
    group, topic = names()
    async with service(tx_broker.url, database_url, flavour, group, topic) as svc:
        sent = await svc.send("k-1")
    assert sent.value == "k-1" and sent.committed
    assert rows(database_url, "k-1") == (1, 1)
    assert topic_bodies(tx_broker.url, topic) == [{"id": "k-1"}]


async def test_a_local_commit_whose_end_is_lost_is_committed_by_the_check_back(
    tx_broker: BrokerProcess, database_url: str, flavour: str
) -> None:
    group, topic = names()
    async with service(tx_broker.url, database_url, flavour, group, topic) as svc:
        sent = await svc.send("k-lost", end_lost=True)
        assert not sent.committed, "the end went as unknown: the broker holds the message"
        assert await settled(svc.producer, sent.transaction_id) == "committed"
        assert LocalTransactionState.COMMIT_MESSAGE in svc.answers
    assert rows(database_url, "k-lost") == (1, 1)
    assert topic_bodies(tx_broker.url, topic) == [{"id": "k-lost"}]


async def test_a_local_failure_is_rolled_back_raised_and_never_visible(
    tx_broker: BrokerProcess, database_url: str, flavour: str
) -> None:
    group, topic = names()
    async with service(tx_broker.url, database_url, flavour, group, topic) as svc:
        with pytest.raises(ValueError, match="the local transaction failed"):
            await svc.send("k-fail", fail=True)
        await asyncio.sleep(1.0)  # a check-back, had one been due, would have come by now
    assert rows(database_url, "k-fail") == (0, 0)
    assert topic_bodies(tx_broker.url, topic) == []
    assert svc.answers == [], "a rolled-back send is ended at once, never checked"


async def test_a_service_killed_between_local_commit_and_end_is_committed_by_the_check_back(
    tx_broker: BrokerProcess, database_url: str, flavour: str
) -> None:
    group, topic = names()
    key = "k-kill"
    engine = create_engine(database_url)
    with engine.begin() as conn:
        metadata.create_all(conn)
        create_transaction_records(conn)
    engine.dispose()
    db = database_url if flavour == "sync" else async_url(database_url)
    child = await asyncio.to_thread(subprocess.run, [sys.executable, str(CHILD), tx_broker.url, db, flavour, group, topic, key],
                                    capture_output=True, text=True, timeout=60)
    assert child.returncode == -9, child.stdout + child.stderr
    assert rows(database_url, key) == (1, 1), "the local transaction committed before the kill"
    assert topic_bodies(tx_broker.url, topic) == [], "no end was sent"

    async with service(tx_broker.url, database_url, flavour, group, topic) as svc:  # the service restarted
        await eventually(lambda: topic_bodies(tx_broker.url, topic), within=25, interval=0.2)
        assert LocalTransactionState.COMMIT_MESSAGE in svc.answers
    assert topic_bodies(tx_broker.url, topic) == [{"id": key}]


async def test_a_check_during_a_held_local_transaction_is_unknown_then_commit(
    tx_broker: BrokerProcess, database_url: str, flavour: str
) -> None:
    group, topic = names()
    release = threading.Event()
    async with service(tx_broker.url, database_url, flavour, group, topic) as svc:
        sending = asyncio.create_task(svc.send("k-held", hold=release, end_lost=True))
        await eventually(lambda: svc.answers, within=10)
        assert svc.answers[:1] == [LocalTransactionState.UNKNOW], "checked while the transaction is open: unknown"
        release.set()
        sent = await sending
        assert await settled(svc.producer, sent.transaction_id) == "committed"
        assert svc.answers[-1] is LocalTransactionState.COMMIT_MESSAGE
        assert LocalTransactionState.ROLLBACK_MESSAGE not in svc.answers
    assert topic_bodies(tx_broker.url, topic) == [{"id": "k-held"}]


async def test_concurrent_sends_with_one_business_key_commit_exactly_one(
    tx_broker: BrokerProcess, database_url: str, flavour: str
) -> None:
    group, topic = names()
    async with service(tx_broker.url, database_url, flavour, group, topic) as svc:
        # Each send writes its own items row (the key is the record's, not the row's), so only the record can refuse.
        barrier, producer = svc.barrier, svc.producer

        async def send(i: int) -> Any:
            if isinstance(barrier, TransactionBarrier):
                return await barrier.send(producer, topic, {"i": i}, "same-key", lambda s: s.execute(items.insert().values(id=f"row-{i}")))

            async def run(s: Any) -> None:
                await s.execute(items.insert().values(id=f"row-{i}"))
            return await barrier.send(producer, topic, {"i": i}, "same-key", run)

        outcomes = await asyncio.gather(*(send(i) for i in range(8)), return_exceptions=True)
    won = [o for o in outcomes if not isinstance(o, BaseException)]
    lost = [o for o in outcomes if isinstance(o, BaseException)]
    assert len(won) == 1, outcomes
    assert all(isinstance(e, DuplicateBusinessKey) and e.code == "DUPLICATE_BUSINESS_KEY" for e in lost), lost
    assert len(topic_bodies(tx_broker.url, topic)) == 1
    engine = create_engine(database_url)
    with engine.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(items)) == 1, "the losers' rows were rolled back"
    engine.dispose()


async def test_a_barrier_send_with_also_delivers_both_after_the_local_commit(tx_broker: BrokerProcess, database_url: str, flavour: str) -> None:
    group, topic = names()
    due = f"{topic}_DUE"
    async with service(tx_broker.url, database_url, flavour, group, topic) as svc:
        with pytest.raises(ValueError, match="the local transaction failed"):
            await svc.send("k-no", fail=True, also=[(due, OutgoingMessage(body='{"due": "k-no"}'))])
        sent = await svc.send("k-also", also=[(due, OutgoingMessage(body='{"due": "k-also"}', delay_ms=300))])
        assert sent.committed and [m.topic for m in sent.result.also] == [due]
        await eventually(lambda: topic_bodies(tx_broker.url, due), within=10)  # released 300 ms after the commit
    assert rows(database_url, "k-also") == (1, 1)  # one business row, one record decides both messages
    assert topic_bodies(tx_broker.url, topic) == [{"id": "k-also"}]
    assert topic_bodies(tx_broker.url, due) == [{"due": "k-also"}]  # the failed send's companion never shows


async def test_a_barrier_send_takes_message_group_and_delay_in_seconds_as_send_does_and_so_do_its_companions(
    tx_broker: BrokerProcess, flavour: str, tmp_path: Path
) -> None:
    """The README's promise: every send path takes ``message_group=`` and ``delay=`` (seconds), one spelling."""
    group, topic = names()
    due = f"{topic}_DUE"
    async with service(tx_broker.url, f"sqlite:///{tmp_path}/barrier.db", flavour, group, topic) as svc:
        sent = await svc.send("k-fifo", message_group="user-7", delay=0.3,
                              also=[(due, outgoing({"due": "k-fifo"}, delay=0.2, message_group="user-7"))])
        assert sent.committed
        await eventually(lambda: topic_bodies(tx_broker.url, topic) and topic_bodies(tx_broker.url, due), within=10)
    [main] = topic_messages(tx_broker.url, topic)
    [companion] = topic_messages(tx_broker.url, due)
    assert (main.message_group, message_json(main)) == ("user-7", {"id": "k-fifo"})
    assert (companion.message_group, message_json(companion)) == ("user-7", {"due": "k-fifo"})
    assert main.deliver_at_ms is not None and companion.deliver_at_ms is not None  # both went through the timer


async def test_a_send_with_also_whose_end_is_lost_is_committed_whole_by_the_check_back(
    tx_broker: BrokerProcess, database_url: str, flavour: str
) -> None:
    group, topic = names()
    due = f"{topic}_DUE"
    async with service(tx_broker.url, database_url, flavour, group, topic) as svc:
        sent = await svc.send("k-lost-also", end_lost=True, also=[(due, OutgoingMessage(body='{"due": "k-lost-also"}'))])
        assert not sent.committed
        assert await settled(svc.producer, sent.transaction_id) == "committed"  # asked with the first message, answered from the one record
    assert topic_bodies(tx_broker.url, topic) == [{"id": "k-lost-also"}]
    assert topic_bodies(tx_broker.url, due) == [{"due": "k-lost-also"}]
