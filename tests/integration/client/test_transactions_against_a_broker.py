"""Transactional producers and the check-back app against real broker processes.

The check app is served for real (uvicorn in a thread, mounted in FastAPI the
way a service mounts it), so the broker's check-backs travel over HTTP exactly
as in production. A few wire details the broker cannot be made to show on
demand (a FLUSH_DISK_TIMEOUT half, a failing end, a hung broker) are pinned
against a scripted server at the end.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from halfmq.client import (
    UNIQ_KEY,
    AsyncTransactionProducer,
    BrokerUnavailable,
    CheckApp,
    CheckUrlRefused,
    LocalTransactionState,
    Message,
    OutgoingMessage,
    Producer,
    SendStatus,
    TransactionProducer,
    message_json,
)
from halfmq.client.loop_thread import run
from halfmq.client.transport import request_not_sent
from halfmq.errors import StoreUnavailable, SystemTopicForbidden, TransactionConflict
from halfmq.testing import ServedApp
from tests.support.processes import BrokerProcess
from tests.support.unique_names import unique
from tests.support.waiting import wait_for

COMMIT = LocalTransactionState.COMMIT_MESSAGE
ROLLBACK = LocalTransactionState.ROLLBACK_MESSAGE
UNKNOW = LocalTransactionState.UNKNOW

FAST_CHECKS = {
    "HALFMQ_BROKER_TRANSACTION_TIMEOUT": "0.5",
    "HALFMQ_BROKER_TRANSACTION_CHECK_INTERVAL": "0.3",
    "HALFMQ_BROKER_TRANSACTION_CHECK_MAX": "3",
}


class Crash(BaseException):
    """The process dying between the local commit and the end (not an Exception: nothing may catch it)."""


def business_id(msg: OutgoingMessage | Message) -> str:
    keys = msg.keys
    return keys if isinstance(keys, str) else keys[0]  # type: ignore[index]


@dataclass
class Listener:
    """A TransactionListener whose check answers from ``book``, the service's own records.

    ``book`` maps a business id to "committed" or "failed"; an id not in it is
    still in progress, so the check answers UNKNOW.
    """

    execute: Callable[[OutgoingMessage, Any], Any] = lambda msg, arg: COMMIT
    book: dict[str, str] = field(default_factory=dict)
    executed: list[tuple[OutgoingMessage, Any]] = field(default_factory=list)
    checked: list[Message] = field(default_factory=list)

    def execute_local_transaction(self, msg: OutgoingMessage, arg: Any) -> LocalTransactionState:
        self.executed.append((msg, arg))
        return self.execute(msg, arg)

    def check_local_transaction(self, msg: Message) -> LocalTransactionState:
        self.checked.append(msg)
        return {"committed": COMMIT, "failed": ROLLBACK}.get(self.book.get(business_id(msg), ""), UNKNOW)


def bodies(producer: Producer, topic: str) -> list[str]:
    out = []
    for queue in producer.get_topic(topic).queues:
        offset = queue.min_offset
        while offset < queue.max_offset:
            page = producer.read(topic, queue.queue_id, offset, max=256)
            out.extend(m.body for m in page.messages)
            offset = page.next_offset
    return sorted(out)


@pytest.fixture
def tx_broker(start_broker: Callable[..., BrokerProcess]) -> BrokerProcess:
    return start_broker(FAST_CHECKS)


@pytest.fixture
def reader(tx_broker: BrokerProcess) -> Iterator[Producer]:
    with Producer(tx_broker.url) as producer:
        yield producer


@pytest.fixture
def topic(reader: Producer) -> str:
    name = unique("TX")
    reader.create_topic(name, queues=2)
    return name


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def heartbeats() -> list[str]:
    """The heartbeats running on the SDK's loop thread, where the blocking producer keeps its own."""
    async def names() -> list[str]:
        return [t.get_name() for t in asyncio.all_tasks() if t.get_name().startswith("halfmq-heartbeat-")]

    return run(names())


# --- the three local outcomes ----------------------------------------------------------


def test_a_committed_local_transaction_delivers_the_message_once(tx_broker: BrokerProcess, reader: Producer, topic: str) -> None:
    listener = Listener(lambda msg, arg: COMMIT)
    with TransactionProducer(tx_broker.url, "pg_commit", listener, check_backs=False) as producer:
        result = producer.send_in_transaction(topic, {"order": 1}, arg={"ctx": 1}, keys=["order-1"], tag="TagA")

    assert result.send_status is SendStatus.SEND_OK
    assert result.local_state is COMMIT
    assert (result.end_error, result.local_error) == (None, None)
    assert result.end is not None and result.end["state"] == "committed" and result.end["duplicate"] is False
    [(seen, arg)] = listener.executed
    assert arg == {"ctx": 1}
    assert seen.properties["TRANSACTION_ID"] == result.transaction_id
    assert seen.properties[UNIQ_KEY] == result.msg_id == result.half.msg_id
    assert seen is result.message

    final = result.end["final"]
    [delivered] = reader.read(topic, final["queue_id"], final["queue_offset"], max=1).messages
    assert delivered.msg_id == result.msg_id
    assert message_json(delivered) == {"order": 1}
    assert (delivered.topic, delivered.keys, delivered.tag) == (topic, ["order-1"], "TagA")
    assert bodies(reader, topic) == [delivered.body], "exactly one message on the topic"


def test_a_rolled_back_local_transaction_delivers_nothing(tx_broker: BrokerProcess, reader: Producer, topic: str) -> None:
    listener = Listener(lambda msg, arg: ROLLBACK)
    with TransactionProducer(tx_broker.url, "pg_rollback", listener, check_backs=False) as producer:
        result = producer.send_in_transaction(topic, "o1")
        assert producer.get_transaction(result.transaction_id)["state"] == "rolled_back"

    assert result.local_state is ROLLBACK and result.end is not None and result.end["state"] == "rolled_back"
    assert len(listener.executed) == 1
    assert bodies(reader, topic) == []


def test_a_local_transaction_that_raises_is_rolled_back_and_the_error_kept(
    tx_broker: BrokerProcess, reader: Producer, topic: str, caplog: pytest.LogCaptureFixture
) -> None:
    boom = ValueError("the order table is locked")

    def execute(msg: OutgoingMessage, arg: Any) -> LocalTransactionState:
        raise boom

    with TransactionProducer(tx_broker.url, "pg_raises", Listener(execute), check_backs=False) as producer:
        result = producer.send_in_transaction(topic, "o1")

    assert result.local_state is ROLLBACK
    assert result.local_error is boom
    assert result.end is not None and result.end["state"] == "rolled_back"
    assert any("execute_local_transaction failed" in r.getMessage() and r.exc_info for r in caplog.records)
    assert bodies(reader, topic) == []


# --- check-backs through the real check app --------------------------------------------


def test_unknown_stays_pending_until_the_check_back_commits_it(tx_broker: BrokerProcess, reader: Producer, topic: str) -> None:
    listener = Listener(lambda msg, arg: UNKNOW)  # the business change is still in flight
    app = FastAPI()
    server = ServedApp(app)
    check_url = f"{server.url}/halfmq/check/"  # a Mount serves the path with the slash
    producer = TransactionProducer(tx_broker.url, "pg_unknown", listener, check_url=check_url, heartbeat_interval=0.2)
    app.mount("/halfmq/check", producer.check_app())
    with server:
        producer.start()
        try:
            registered = [{**g, "producers": [{k: v for k, v in p.items() if k != "last_heartbeat_timestamp"} for p in g["producers"]]}
                          for g in httpx.get(f"{tx_broker.url}/v1/producers").json()["groups"]]  # who, not when
            entry = {"client_id": producer.client_id, "check_url": check_url}
            assert {"producer_group": "pg_unknown", "producers": [entry]} in registered
            assert len(heartbeats()) == 1

            result = producer.send_in_transaction(topic, "o7", keys=["order-7"])
            assert result.local_state is UNKNOW and result.end_error is None
            assert result.end is not None and result.end["state"] == "pending"
            assert bodies(reader, topic) == []

            listener.book["order-7"] = "committed"  # the business change lands after all
            wait_for(lambda: producer.get_transaction(result.transaction_id)["state"] == "committed", timeout=10.0, interval=0.05)
        finally:
            started = time.monotonic()
            producer.close()
            closing = time.monotonic() - started
    assert closing < 1.0, f"close() took {closing:.2f}s: it must stop the heartbeat promptly"
    assert heartbeats() == []

    asked = [m for m in listener.checked if m.properties.get("TRANSACTION_ID") == result.transaction_id]
    assert asked and asked[-1].topic == topic and asked[-1].msg_id == result.msg_id and asked[-1].keys == ["order-7"]
    assert bodies(reader, topic) == ["o7"]


def test_a_producer_dying_after_its_local_commit_is_committed_by_the_check_back(
    tx_broker: BrokerProcess, reader: Producer, topic: str
) -> None:
    seen_ids: list[str] = []

    def commit_then_die(msg: OutgoingMessage, arg: Any) -> LocalTransactionState:
        listener.book[business_id(msg)] = "committed"  # the local database commit
        seen_ids.append(msg.properties["TRANSACTION_ID"])
        raise Crash  # ... and the process dies before the end goes out

    listener = Listener(commit_then_die)
    app = FastAPI()
    server = ServedApp(app)
    producer = TransactionProducer(tx_broker.url, "pg_crash", listener, check_url=f"{server.url}/halfmq/check")
    app.add_route("/halfmq/check", producer.check_app())  # the exact path, no trailing slash
    with server, producer:
        with pytest.raises(Crash):
            producer.send_in_transaction(topic, "o9", keys=["order-9"])
        [txid] = seen_ids
        assert producer.get_transaction(txid)["state"] == "pending", "no end may be sent after a crash"

        view = wait_for(lambda: (v := producer.get_transaction(txid))["state"] == "committed" and v, timeout=10.0, interval=0.05)
    assert view["check_times"] >= 1 and view["last_answer"] == "commit"
    assert bodies(reader, topic) == ["o9"]


# --- failures before the local transaction ----------------------------------------------


def test_a_half_refused_by_the_broker_raises_and_the_local_transaction_never_runs(tx_broker: BrokerProcess) -> None:
    listener = Listener()
    with TransactionProducer(tx_broker.url, "pg_sys", listener, check_backs=False) as producer, pytest.raises(SystemTopicForbidden):
        producer.send_in_transaction("RMQ_SYS_TRANS_HALF_TOPIC", "x")
    assert listener.executed == []


def test_a_broker_that_is_down_raises_broker_unavailable_after_retrying_the_connect(caplog: pytest.LogCaptureFixture) -> None:
    listener = Listener()
    with TransactionProducer(closed_port_url(), "pg_down", listener, retries=2, check_backs=False) as producer:
        with pytest.raises(BrokerUnavailable) as caught:
            producer.send_in_transaction("T", "x")
    assert request_not_sent(caught.value)
    assert listener.executed == []
    retried = [r for r in caplog.records if r.name == "halfmq.client.retry"]
    assert len(retried) == 2, "a refused connection is safe to retry: the half never left"


def test_a_check_url_the_broker_refuses_makes_start_raise(tx_broker: BrokerProcess) -> None:
    producer = TransactionProducer(tx_broker.url, "pg_evil", Listener(), check_url="http://evil.example/x")
    with pytest.raises(CheckUrlRefused):
        producer.start()
    assert heartbeats() == []
    with pytest.raises(RuntimeError, match="start"):
        producer.send_in_transaction("T", "x")
    producer.close()


# --- the check app over real HTTP ------------------------------------------------------


def check_request(group: str = "pg", **message: Any) -> dict[str, Any]:
    return {
        "transaction_id": "tx1",
        "producer_group": group,
        "check_times": 1,
        "message": {
            "msg_id": "M1", "topic": "ORDERS", "queue_id": 1, "queue_offset": 0, "commit_log_offset": 0,
            "born_timestamp": 1, "store_timestamp": 1, "body": "o1", "keys": ["order-1"],
            "properties": {"TRANSACTION_ID": "tx1"}, **message,
        },
    }


def test_the_check_app_answers_states_problems_and_methods_over_http(caplog: pytest.LogCaptureFixture) -> None:
    answers: dict[str, Any] = {"order-ok": COMMIT, "order-none": None}

    class Answering:
        def execute_local_transaction(self, msg: OutgoingMessage, arg: Any) -> LocalTransactionState:
            raise AssertionError("not called by the check app")

        async def check_local_transaction(self, msg: Message) -> Any:
            key = business_id(msg)
            if key not in answers:
                raise RuntimeError("the orders database is down")
            return answers[key]

    # Served on its own with lifespan on: uvicorn fails to start unless the app answers it.
    with ServedApp(CheckApp(Answering(), producer_group="pg"), lifespan="on") as server, httpx.Client(base_url=server.url) as http:
        ok = http.post("/", json=check_request(keys=["order-ok"]))
        assert (ok.status_code, ok.json()) == (200, {"state": "commit"})
        assert http.post("/", json=check_request(keys=["order-none"])).json() == {"state": "unknown"}

        failing = http.post("/", json=check_request(keys=["order-x"]))
        assert (failing.status_code, failing.json()) == (200, {"state": "unknown"})
        assert any("check_local_transaction failed" in r.getMessage() and r.exc_info for r in caplog.records)

        garbage = http.post("/", content=b"{not json", headers={"content-type": "application/json"})
        assert garbage.status_code == 400 and garbage.headers["content-type"] == "application/problem+json"
        assert garbage.json()["code"] == "MALFORMED_JSON"
        not_a_check = http.post("/", json={"transaction_id": "tx1"})
        assert not_a_check.status_code == 400 and not_a_check.json()["code"] == "INVALID_REQUEST"

        other_group = http.post("/", json=check_request(group="someone-else", keys=["order-ok"]))
        assert other_group.status_code == 403 and other_group.json()["code"] == "PRODUCER_GROUP_MISMATCH"

        get = http.get("/")
        assert get.status_code == 405 and get.headers["allow"] == "POST"


def test_in_fastapi_a_mount_needs_the_trailing_slash_and_a_route_does_not() -> None:
    """Pins the check_app docstring: the broker follows no redirects, so the 307 would fail every check."""
    listener = Listener(book={"order-1": "committed"})
    app = FastAPI()
    app.mount("/mounted", CheckApp(listener))
    app.add_route("/routed", CheckApp(listener))
    with ServedApp(app) as server, httpx.Client(base_url=server.url) as http:
        assert http.post("/mounted/", json=check_request()).json() == {"state": "commit"}
        assert http.post("/mounted", json=check_request()).status_code == 307
        assert http.post("/routed", json=check_request()).json() == {"state": "commit"}
        assert http.get("/routed").status_code == 405


# --- asyncio --------------------------------------------------------------------------


async def test_64_concurrent_async_transactions_each_commit_exactly_once(tx_broker: BrokerProcess, reader: Producer, topic: str) -> None:
    running = 0
    peak = 0

    class AsyncListener:
        async def execute_local_transaction(self, msg: OutgoingMessage, arg: Any) -> LocalTransactionState:
            nonlocal running, peak
            running += 1
            peak = max(peak, running)
            await asyncio.sleep(0.05)  # the local database write
            running -= 1
            return COMMIT

        async def check_local_transaction(self, msg: Message) -> LocalTransactionState:
            return UNKNOW

    expected = [f"order-{i:02d}" for i in range(64)]
    async with AsyncTransactionProducer(tx_broker.url, "pg_async", AsyncListener(), check_backs=False) as producer:
        results = await asyncio.gather(*(producer.send_in_transaction(topic, body, keys=[body]) for body in expected))

    assert [r.local_state for r in results] == [COMMIT] * 64
    assert all(r.end is not None and r.end["state"] == "committed" and r.end_error is None for r in results)
    assert len({r.transaction_id for r in results}) == 64
    assert peak >= 16, f"sends were serialized: at most {peak} local transactions ran at once"
    assert await asyncio.to_thread(bodies, reader, topic) == expected


async def test_the_async_producer_runs_a_blocking_listener_in_a_thread_and_a_crash_is_settled_by_the_check_back(
    tx_broker: BrokerProcess, reader: Producer, topic: str
) -> None:
    loop_thread = threading.get_ident()
    threads: list[int] = []

    def execute(msg: OutgoingMessage, arg: Any) -> LocalTransactionState:
        threads.append(threading.get_ident())
        if arg == "crash":
            listener.book[business_id(msg)] = "committed"
            raise Crash
        return COMMIT

    listener = Listener(execute)
    app = FastAPI()
    server = ServedApp(app)
    producer = AsyncTransactionProducer(
        tx_broker.url, "pg_async_sync", listener, check_url=f"{server.url}/halfmq/check", heartbeat_interval=0.1
    )
    app.add_route("/halfmq/check", producer.check_app())
    with server:
        async with producer:
            committed = await producer.send_in_transaction(topic, "fine", keys=["order-1"])
            with pytest.raises(Crash):
                await producer.send_in_transaction(topic, "dies", arg="crash", keys=["order-2"])
            [pending] = await producer.list_transactions("pending")
            assert pending["message"]["body"] == "dies"
            for _ in range(200):
                if (await producer.get_transaction(pending["transaction_id"]))["state"] == "committed":
                    break
                await asyncio.sleep(0.05)
            else:
                raise AssertionError("the check-back never committed the crashed transaction")
        assert not [t for t in asyncio.all_tasks() if t.get_name().startswith("halfmq-heartbeat-")]

    assert committed.local_state is COMMIT and committed.end is not None and committed.end["state"] == "committed"
    assert threads and loop_thread not in threads
    assert await asyncio.to_thread(bodies, reader, topic) == ["dies", "fine"]


async def test_the_async_producer_raises_check_url_refused_from_start(tx_broker: BrokerProcess) -> None:
    producer = AsyncTransactionProducer(tx_broker.url, "pg_async_evil", Listener(), check_url="http://evil.example/x")
    with pytest.raises(CheckUrlRefused):
        await producer.start()
    await producer.close()


# --- wire details against a scripted server --------------------------------------------


@dataclass
class Script:
    """Per-path-prefix answers handed out in order (the last repeats), and the requests seen."""

    answers: dict[str, list[tuple[int, Any]]] = field(default_factory=dict)
    seen: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    hang: float = 0.0

    def answer(self, prefix: str, status: int, body: Any) -> None:
        self.answers.setdefault(prefix, []).append((status, body))

    def requests(self, suffix: str) -> list[dict[str, Any]]:
        return [body for path, body in self.seen if path.endswith(suffix)]


@pytest.fixture
def scripted() -> Iterator[tuple[str, Script]]:
    script = Script()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
            script.seen.append((self.path, json.loads(raw or b"{}")))
            if script.hang:
                time.sleep(script.hang)
            queue = next(q for prefix, q in sorted(script.answers.items(), key=lambda kv: -len(kv[0])) if self.path.startswith(prefix))
            status, body = queue.pop(0) if len(queue) > 1 else queue[0]
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json" if status < 400 else "application/problem+json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.handle_error = lambda request, client_address: None  # type: ignore[method-assign]  # clients that timed out
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", script
    finally:
        server.shutdown()
        server.server_close()


def half_answer(status: str = "SEND_OK") -> dict[str, Any]:
    return {"status": status, "transaction_id": "T1", "msg_id": "M1", "commit_log_offset": 10, "queue_offset": 0}


def view(state: str) -> dict[str, Any]:
    return {"transaction_id": "T1", "producer_group": "pg", "state": state, "check_times": 0, "final": None, "duplicate": False}


def test_a_half_stored_without_send_ok_is_rolled_back_without_running_the_local_transaction(scripted: tuple[str, Script]) -> None:
    url, script = scripted
    script.answer("/v1/transactions", 200, half_answer("FLUSH_DISK_TIMEOUT"))
    script.answer("/v1/transactions/T1/end", 200, view("rolled_back"))
    listener = Listener()
    with TransactionProducer(url, "pg", listener, check_backs=False, idempotent=False) as producer:
        result = producer.send_in_transaction("T", "x")
    assert listener.executed == []
    assert (result.send_status, result.local_state) == (SendStatus.FLUSH_DISK_TIMEOUT, ROLLBACK)
    assert script.requests("/end") == [{"producer_group": "pg", "state": "rollback", "from_check": False}]


def test_the_blocking_producer_runs_the_local_transaction_in_the_thread_that_sends(scripted: tuple[str, Script]) -> None:
    """The caller's database session and thread-locals live in its thread (a sqlite3 connection refuses others)."""
    url, script = scripted
    script.answer("/v1/transactions", 200, half_answer())
    script.answer("/v1/transactions/T1/end", 200, view("committed"))
    threads: list[int] = []

    def execute(msg: OutgoingMessage, arg: Any) -> LocalTransactionState:
        threads.append(threading.get_ident())
        return COMMIT

    with TransactionProducer(url, "pg", Listener(execute), check_backs=False, idempotent=False) as producer:
        result = producer.send_in_transaction("T", "x")
    assert threads == [threading.get_ident()]
    assert result.end is not None and result.end["state"] == "committed"


def test_an_end_is_retried_and_a_failed_end_is_returned_not_raised(scripted: tuple[str, Script]) -> None:
    url, script = scripted
    script.answer("/v1/transactions", 200, half_answer())
    script.answer("/v1/transactions/T1/end", 503, StoreUnavailable("not now").to_problem())
    script.answer("/v1/transactions/T1/end", 409, TransactionConflict("already rolled back by a check").to_problem())
    with TransactionProducer(url, "pg", Listener(lambda msg, arg: COMMIT), retries=3, check_backs=False, idempotent=False) as producer:
        result = producer.send_in_transaction("T", "x")
    assert result.local_state is COMMIT and result.end is None
    assert isinstance(result.end_error, TransactionConflict)
    assert [r["state"] for r in script.requests("/end")] == ["commit", "commit"], "503 retried, 409 not"


def test_an_unnumbered_half_that_reached_the_broker_is_never_retried(scripted: tuple[str, Script]) -> None:
    url, script = scripted
    script.answer("/v1/transactions", 503, StoreUnavailable("not now").to_problem())
    listener = Listener()
    with TransactionProducer(url, "pg", listener, retries=3, check_backs=False, idempotent=False) as producer, pytest.raises(StoreUnavailable):
        producer.send_in_transaction("T", "x")
    assert len(script.requests("/v1/transactions")) == 1 and listener.executed == []


@pytest.mark.parametrize("flavour", ["sync", "async", "async coalesced"])
def test_an_unnumbered_half_that_timed_out_waiting_for_the_answer_is_never_retried(scripted: tuple[str, Script], flavour: str) -> None:
    url, script = scripted
    script.hang = 1.0  # longer than the client's timeout: the broker may well have stored it
    script.answer("/v1/transactions", 200, half_answer())
    script.answer("/v1/transaction-batches/half", 200, {"results": [half_answer()]})
    listener = Listener()
    if flavour == "sync":
        producer = TransactionProducer(url, "pg", listener, timeout=0.3, retries=3, check_backs=False, idempotent=False)
        with producer, pytest.raises(BrokerUnavailable) as caught:
            producer.send_in_transaction("T", "x")
    else:
        async def run() -> None:
            async with AsyncTransactionProducer(url, "pg", listener, timeout=0.3, retries=3, check_backs=False, idempotent=False,
                                                coalesce=flavour == "async coalesced") as producer:
                await producer.send_in_transaction("T", "x")

        with pytest.raises(BrokerUnavailable) as caught:
            asyncio.run(run())
    assert not request_not_sent(caught.value)
    halves = script.requests("/v1/transactions") + script.requests("/v1/transaction-batches/half")
    assert len(halves) == 1, "a retried half would open a second transaction"
    assert listener.executed == []


def test_start_survives_a_broker_that_is_not_up_yet_and_close_stops_the_heartbeat_at_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    producer = TransactionProducer(closed_port_url(), "pg", Listener(), check_url="http://127.0.0.1:9/x", retries=0)
    producer.start()  # a broker still starting is no reason to fail; the heartbeat keeps trying
    assert any("first heartbeat failed" in r.getMessage() for r in caplog.records)
    assert len(heartbeats()) == 1
    started = time.monotonic()
    producer.close()
    assert time.monotonic() - started < 0.5 and heartbeats() == []


def test_the_listener_must_be_started_and_match_the_flavour() -> None:
    class AsyncOnly:
        async def execute_local_transaction(self, msg: OutgoingMessage, arg: Any) -> LocalTransactionState:
            return COMMIT

        async def check_local_transaction(self, msg: Message) -> LocalTransactionState:
            return COMMIT

    with pytest.raises(TypeError, match="AsyncTransactionProducer"):
        TransactionProducer(closed_port_url(), "pg", AsyncOnly())
    producer = TransactionProducer(closed_port_url(), "pg", Listener())
    with pytest.raises(RuntimeError, match="start"):
        producer.send_in_transaction("T", "x")
    producer.close()
    with pytest.raises(RuntimeError, match="closed"):
        producer.start()


def test_local_states_use_rocketmq_names_and_the_broker_values() -> None:
    assert [s.name for s in LocalTransactionState] == ["COMMIT_MESSAGE", "ROLLBACK_MESSAGE", "UNKNOW"]
    assert [s.value for s in LocalTransactionState] == ["commit", "rollback", "unknown"]
    assert LocalTransactionState.UNKNOWN is LocalTransactionState.UNKNOW
    assert LocalTransactionState("unknown") is UNKNOW

