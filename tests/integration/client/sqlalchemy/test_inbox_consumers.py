"""The inbox with real broker processes and real consumer processes (tests/support/inbox_consumer.py), on SQLite and PostgreSQL.

Each handled message writes one row to ``effects``, which has no unique key of its own: a
message handled twice would show as two rows.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import orjson
import pytest
from sqlalchemy import Engine, create_engine, func, select

from tests.conftest import BrokerFactory
from tests.support.inbox_consumer import EFFECTS, INBOX, metadata
from tests.support.processes import ROOT, BrokerProcess
from tests.support.report import report
from tests.support.waiting import wait_for

pytestmark = pytest.mark.slow

TOPIC = "INBOX_TOPIC"
GROUP = "inbox_test"


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
    engine = create_engine(database_url)
    metadata.create_all(engine)
    yield engine
    engine.dispose()


@pytest.fixture
def broker(request: pytest.FixtureRequest, start_broker: BrokerFactory) -> BrokerProcess:
    # A short ladder: redeliveries 0.2 s apart, then the DLQ; two redeliveries unless a test asks for more
    # (the kill -9 test does: a message caught in flight by three kills in a row would be dead-lettered, unhandled).
    reconsumes = getattr(request, "param", 2)
    b = start_broker({"HALFMQ_BROKER_RETRY_DELAYS": "0.2", "HALFMQ_BROKER_MAX_RECONSUME_TIMES": str(reconsumes)})
    httpx.post(f"{b.url}/v1/topics", json={"name": TOPIC, "queues": 4}).raise_for_status()
    return b


Start = Callable[..., subprocess.Popen[bytes]]


@pytest.fixture
def start_consumer(broker: BrokerProcess, database_url: str, tmp_path: Path) -> Iterator[Start]:
    started: list[subprocess.Popen[bytes]] = []

    def start(**env: str) -> subprocess.Popen[bytes]:
        with open(tmp_path / f"consumer-{len(started)}.log", "wb") as log:  # the child keeps its own copy
            proc = subprocess.Popen(
                [sys.executable, "-m", "tests.support.inbox_consumer"], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                env={**os.environ, "INBOX_BROKER_URL": broker.url, "INBOX_DB_URL": database_url, "INBOX_TOPIC": TOPIC,
                     "INBOX_GROUP": GROUP, "INBOX_EVENTS": str(tmp_path / "events"), **env},
            )
        started.append(proc)
        return proc

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    for proc in started:
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()


def send(broker: BrokerProcess, bodies: list[dict[str, object]], uniq_keys: list[str] | None = None) -> None:
    messages = [{"body": orjson.dumps(body).decode(), "properties": {"UNIQ_KEY": uniq_keys[i]} if uniq_keys else {}}
                for i, body in enumerate(bodies)]
    for i in range(0, len(messages), 200):
        httpx.post(f"{broker.url}/v1/topics/{TOPIC}/messages", json={"messages": messages[i : i + 200]},
                   timeout=30).raise_for_status()


def effects(engine: Engine) -> Counter[str]:
    with engine.connect() as conn:
        return Counter(conn.scalars(select(EFFECTS.c.key)))


def inbox_rows(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.scalar(select(func.count()).select_from(INBOX)) or 0)


def events(tmp_path: Path) -> list[tuple[str, str, str]]:
    path = tmp_path / "events"
    if not path.exists():
        return []
    return [tuple(line.split(" ", 2)) for line in path.read_text().splitlines()]  # type: ignore[misc]


def lag(broker: BrokerProcess) -> int:
    resp = httpx.get(f"{broker.url}/v1/consumer-groups/{GROUP}")
    if resp.status_code == 404:  # the group has not received yet
        return sys.maxsize
    group = resp.raise_for_status().json()
    return sum(q["lag"] for t in group["topics"] for q in t["queues"])


def dlq(broker: BrokerProcess) -> list[dict[str, object]]:
    resp = httpx.get(f"{broker.url}/v1/topics/%25DLQ%25{GROUP}/queues/0/messages", params={"max": 10})
    return resp.json()["messages"] if resp.status_code == 200 else []


MESSAGES, KILLS = 2000, 12


@pytest.mark.parametrize("broker", [16], indirect=True)  # RocketMQ's default: more redeliveries than kills
def test_kill_9_between_commit_and_ack_again_and_again_still_handles_every_message_exactly_once(
    broker: BrokerProcess, engine: Engine, start_consumer: Start, tmp_path: Path, database_url: str,
) -> None:
    send(broker, [{"n": i} for i in range(MESSAGES)], [f"k-{i}" for i in range(MESSAGES)])
    rng = random.Random(21)
    kills, lives = 0, 0

    def life() -> subprocess.Popen[bytes]:
        nonlocal lives
        lives += 1
        # Every other life runs the asyncio consumer, so both handlers face the kills.
        env = {"INBOX_ASYNC": "1" if lives % 2 == 0 else "0"}
        if kills < KILLS:
            env["INBOX_KILL_AFTER"] = str(rng.randint(60, 150))  # 12 x 150 < 2000: every life dies
        return start_consumer(**env)

    def stuck() -> str:
        log = tmp_path / f"consumer-{lives - 1}.log"
        return (f"stuck: {kills} kills, {sum(effects(engine).values())} effects, lag {lag(broker)}, "
                f"dead letters {len(dlq(broker))}; the current consumer's log:\n{log.read_text()[-3000:]}")

    proc = life()
    deadline = time.monotonic() + 200  # well inside pytest's timeout, so a hang reports its state
    while True:
        assert time.monotonic() < deadline, stuck()
        code = proc.poll()
        if code is not None:
            assert code == -signal.SIGKILL, (tmp_path / f"consumer-{lives - 1}.log").read_text()[-3000:]
            kills += 1
            proc = life()
        elif kills >= KILLS and sum(effects(engine).values()) >= MESSAGES and lag(broker) == 0:
            break
        time.sleep(0.2)
    time.sleep(3)  # anything still unacked would be redelivered by now (invisible_seconds = 2)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == 0

    done = effects(engine)
    seen = Counter(event for event, _, _ in events(tmp_path))
    report(f"\ninbox kill -9 on {database_url.split(':')[0]}: messages={MESSAGES} kills={kills} "
          f"effects={sum(done.values())} redeliveries skipped={seen['skipped']}")
    assert kills >= 10
    assert len(done) == MESSAGES and set(done.values()) == {1}
    assert inbox_rows(engine) == MESSAGES and lag(broker) == 0 and dlq(broker) == []
    # Events are written after the commit, so a kill in another thread can lose a few; never add any.
    assert seen["handled"] <= MESSAGES and seen["skipped"] > 0


def test_one_message_with_two_consumer_processes_at_once_has_one_effect(
    broker: BrokerProcess, engine: Engine, start_consumer: Start, tmp_path: Path,
) -> None:
    # The first holds the message in its handler past its invisibility, so the broker hands it to the
    # second while the first's transaction is still open: the second's claim waits, then finds the row.
    first = start_consumer(INBOX_SLEEP="3", INBOX_INVISIBLE="1")
    second = start_consumer(INBOX_SLEEP="3", INBOX_INVISIBLE="1")
    send(broker, [{"n": 1}], ["twice"])
    handled = wait_for(lambda: [pid for e, pid, _ in events(tmp_path) if e == "handled"], timeout=60)
    wait_for(lambda: lag(broker) == 0 and any(e == "skipped" and pid != handled[0] for e, pid, _ in events(tmp_path)), timeout=60)
    assert effects(engine) == Counter({"twice": 1}) and inbox_rows(engine) == 1
    assert len([e for e, _, _ in events(tmp_path) if e == "handled"]) == 1
    assert {pid for e, pid, _ in events(tmp_path) if e != "attempt"} == {str(first.pid), str(second.pid)}


def test_a_handler_that_raises_writes_nothing_and_the_message_reaches_the_dlq_after_the_ladder(
    broker: BrokerProcess, engine: Engine, start_consumer: Start, tmp_path: Path,
) -> None:
    start_consumer()
    send(broker, [{"fail": True}, {"n": 2}], ["bad", "good"])
    dead = wait_for(lambda: dlq(broker), timeout=60)
    assert [orjson.loads(str(m["body"])) for m in dead] == [{"fail": True}]
    attempts = Counter(key for event, _, key in events(tmp_path) if event == "attempt")
    assert attempts["bad"] == 3  # the first delivery and two redeliveries, then the DLQ
    assert effects(engine) == Counter({"good": 1}) and inbox_rows(engine) == 1


def test_two_different_messages_about_one_order_have_one_effect(
    broker: BrokerProcess, engine: Engine, start_consumer: Start, tmp_path: Path,
) -> None:
    start_consumer(INBOX_KEY="order_id")
    send(broker, [{"order_id": "o-1", "try": 1}, {"order_id": "o-1", "try": 2}, {"order_id": "o-2"}], ["a", "b", "c"])
    wait_for(lambda: lag(broker) == 0 and len([e for e, _, _ in events(tmp_path) if e != "attempt"]) >= 3, timeout=30)
    assert effects(engine) == Counter({"o-1": 1, "o-2": 1}) and inbox_rows(engine) == 2
    assert Counter(e for e, _, _ in events(tmp_path) if e != "attempt") == Counter({"handled": 2, "skipped": 1})
