"""A real broker on a real full disk (a small tmpfs): sends are refused as retriable, nothing acknowledged is lost."""

from __future__ import annotations

import time
from collections import Counter

import httpx
import pytest

from tests.conftest import TEST_BROKER_ENV
from tests.support.check_server import CheckServer
from tests.support.processes import BrokerProcess
from tests.support.small_disk import SmallDisk
from tests.support.waiting import wait_for

from .http_helpers import path, read_all, receive, settle

TOPIC = "DISK_TOPIC"
BIG = "b" * 20_000  # larger than the slack left in the commit log's last page


def post_send(client: httpx.Client, topic: str, *bodies: str) -> httpx.Response:
    return client.post(path("v1", "topics", topic, "messages"), json={"messages": [{"body": b} for b in bodies]})


def assert_store_unavailable(resp: httpx.Response) -> None:
    assert resp.status_code == 503, resp.text[:500]
    assert resp.headers["content-type"].startswith("application/problem+json")
    body = resp.json()
    assert body["code"] == "STORE_UNAVAILABLE"
    assert body["retriable"] is True
    assert int(resp.headers["retry-after"]) >= 1


def log_of(broker: BrokerProcess) -> str:
    return broker.log_path.read_text(errors="replace")


def broker_on(start_broker, disk: SmallDisk, **env: str) -> BrokerProcess:
    return start_broker(env=env or None, data_dir=disk.path / "data")


def test_send_on_a_full_disk_answers_retriable_503_with_one_log_line_and_works_again_when_room_returns(
        small_disk: SmallDisk, start_broker) -> None:
    broker = broker_on(start_broker, small_disk)
    with httpx.Client(base_url=broker.url, timeout=10) as client:
        client.post("/v1/topics", json={"name": TOPIC, "queues": 2}).raise_for_status()
        assert post_send(client, TOPIC, "before").status_code == 200
        small_disk.fill()
        for _ in range(5):
            assert_store_unavailable(post_send(client, TOPIC, BIG))
        assert "No space left on device" in client.get("/healthz").json()["store_problem"]
        small_disk.free()
        resp = post_send(client, TOPIC, BIG)
        assert resp.status_code == 200, resp.text[:300]
        assert client.get("/healthz").json()["store_problem"] is None
        assert resp.json()["results"][0]["status"] == "SEND_OK"
    text = log_of(broker)
    assert "Traceback" not in text
    assert text.count("store unavailable") == 1, text[-3000:]
    assert text.count("store available again") == 1, text[-3000:]


def test_every_acknowledged_message_survives_a_full_disk_exactly_once_and_the_log_recovers_clean(
        small_disk: SmallDisk, start_broker) -> None:
    broker = broker_on(start_broker, small_disk)
    acked: list[str] = []
    refused: list[httpx.Response] = []
    with httpx.Client(base_url=broker.url, timeout=10) as client:
        client.post("/v1/topics", json={"name": TOPIC, "queues": 2}).raise_for_status()

        def attempt(body: str) -> None:
            resp = post_send(client, TOPIC, body)
            if resp.status_code == 200 and resp.json()["results"][0]["status"] == "SEND_OK":
                acked.append(body)
            else:
                refused.append(resp)

        attempt("a0")
        small_disk.fill()  # the log's last page still has room: a big send writes part of itself, then fails
        for i in range(3):
            attempt(f"b{i}-" + BIG)
        for i in range(3):  # small ones still fit the page, on top of what the failed ones left
            attempt(f"c{i}")
        small_disk.free()
        for i in range(10):  # far shorter than what failed: they do not cover its leftovers
            attempt(f"d{i}")
        assert len(refused) >= 3
        broker.kill9()
        broker.start()
        stored = [m["body"] for q in range(2) for m in read_all(client, TOPIC, q)]
    assert Counter(stored) == Counter(acked), "stored messages differ from acknowledged ones"
    restart_log = log_of(broker).split("===== start #2")[1]
    assert "truncating" not in restart_log and "dropping" not in restart_log, restart_log[-3000:]
    assert "Traceback" not in log_of(broker)
    for resp in refused:
        assert_store_unavailable(resp)


def test_a_topic_auto_created_on_a_full_disk_is_refused_not_kept_in_memory(small_disk: SmallDisk, start_broker) -> None:
    broker = broker_on(start_broker, small_disk)
    with httpx.Client(base_url=broker.url, timeout=10) as client:
        assert post_send(client, TOPIC, "warm up").status_code == 200
        small_disk.fill()
        refused = post_send(client, "NEW_TOPIC", "first")
        while_full = client.get(path("v1", "topics", "NEW_TOPIC"))
        explicit = client.post("/v1/topics", json={"name": "EXPLICIT", "queues": 2})
        explicit_while_full = client.get(path("v1", "topics", "EXPLICIT"))
        small_disk.free()
        resp = post_send(client, "NEW_TOPIC", "second")
        assert resp.status_code == 200 and resp.json()["results"][0]["status"] == "SEND_OK"
        time.sleep(0.6)  # a periodic checkpoint passes the message
        broker.kill9()
        broker.start()
        topic = client.get(path("v1", "topics", "NEW_TOPIC"))
        assert topic.status_code == 200, f"an acknowledged send's topic is gone after restart: {topic.text}"
        assert [m["body"] for q in range(len(topic.json()["queues"])) for m in read_all(client, "NEW_TOPIC", q)] == ["second"]
    assert_store_unavailable(refused)
    assert while_full.status_code == 404, "a topic whose metadata could not be written exists in memory"
    assert_store_unavailable(explicit)
    assert explicit_while_full.status_code == 404


def test_broker_starts_on_a_full_disk_serves_reads_and_receives_and_takes_sends_again_when_room_returns(
        small_disk: SmallDisk, start_broker) -> None:
    broker = broker_on(start_broker, small_disk)
    with httpx.Client(base_url=broker.url, timeout=10) as client:
        client.post("/v1/topics", json={"name": TOPIC, "queues": 1}).raise_for_status()
        assert post_send(client, TOPIC, "m0", "m1", "m2").status_code == 200
        broker.stop()
        small_disk.fill()
        broker.start()
        assert [m["body"] for m in read_all(client, TOPIC, 0)] == ["m0", "m1", "m2"]
        assert sorted(m["body"] for m in receive(client, "G", TOPIC, 10)) == ["m0", "m1", "m2"]
        assert_store_unavailable(post_send(client, TOPIC, BIG))
        small_disk.free()
        assert post_send(client, TOPIC, BIG).status_code == 200
    assert "Traceback" not in log_of(broker)


def test_broker_that_must_rebuild_on_a_full_disk_starts_read_only(small_disk: SmallDisk, start_broker) -> None:
    broker = broker_on(start_broker, small_disk)
    with httpx.Client(base_url=broker.url, timeout=10) as client:
        client.post("/v1/topics", json={"name": TOPIC, "queues": 1}).raise_for_status()
        assert post_send(client, TOPIC, *[f"m{i}-" + "z" * 100 for i in range(300)]).status_code == 200
        broker.stop()
        data = small_disk.path / "data"
        (data / "checkpoint.json").unlink()
        for entry in (data / "consumequeue" / TOPIC / "0").iterdir():
            entry.unlink()  # a consume queue lost with the page cache: recovery must write it again
        small_disk.fill()
        broker.start()
        assert client.get(path("v1", "topics", TOPIC)).status_code == 200
        assert_store_unavailable(post_send(client, TOPIC, "refused"))
        assert "rebuild the consume queues" in client.get("/healthz").json()["store_problem"]
        assert "read-only" in log_of(broker)
        small_disk.free()
        broker.restart()
        assert len(read_all(client, TOPIC, 0)) == 300
        assert post_send(client, TOPIC, "after").status_code == 200
    assert "Traceback" not in log_of(broker)


def test_a_transaction_on_a_full_disk_is_refused_retriably_and_commits_once_room_returns(
        small_disk: SmallDisk, start_broker) -> None:
    broker = broker_on(start_broker, small_disk)
    with httpx.Client(base_url=broker.url, timeout=10) as client:
        client.post("/v1/topics", json={"name": TOPIC, "queues": 1}).raise_for_status()
        resp = client.post("/v1/transactions", json={"producer_group": "pg", "topic": TOPIC, "message": {"body": "o1"}})
        assert resp.status_code == 200, resp.text
        txid = resp.json()["transaction_id"]
        small_disk.fill()
        assert_store_unavailable(client.post("/v1/transactions", json={
            "producer_group": "pg", "topic": TOPIC, "message": {"body": BIG}}))
        assert_store_unavailable(client.post(f"/v1/transactions/{txid}/end", json={"producer_group": "pg", "state": "commit"}))
        assert client.get(f"/v1/transactions/{txid}").json()["state"] == "pending"
        small_disk.free()
        end = client.post(f"/v1/transactions/{txid}/end", json={"producer_group": "pg", "state": "commit"})
        assert end.status_code == 200, end.text
        assert [m["body"] for m in read_all(client, TOPIC, 0)] == ["o1"]


def test_a_message_due_for_the_dlq_on_a_full_disk_waits_and_moves_once_room_returns(
        small_disk: SmallDisk, start_broker) -> None:
    broker = broker_on(start_broker, small_disk)  # max 3 reconsumes, retry delays 0.2 s and 0.4 s
    with httpx.Client(base_url=broker.url, timeout=10) as client:
        client.post("/v1/topics", json={"name": TOPIC, "queues": 1}).raise_for_status()
        assert post_send(client, TOPIC, "poison").status_code == 200
        for _ in range(4):
            got = receive(client, "G", TOPIC, 10, wait=3)
            assert [m["body"] for m in got] == ["poison"]
            settle(client, "nack", "G", TOPIC, [got[0]["receipt_handle"]])
        small_disk.fill()
        time.sleep(0.5)  # the message is due again, for the DLQ this time
        while_full = client.post(path("v1", "consumer-groups", "G", "topics", TOPIC, "receive"),
                                 json={"max_messages": 10, "invisible_seconds": 30, "wait_seconds": 0})
        small_disk.free()
        deadline = time.monotonic() + 10
        dlq: list[dict] = []
        while time.monotonic() < deadline and not dlq:
            assert receive(client, "G", TOPIC, 10, wait=0.5) == []
            if client.get(path("v1", "topics", "%DLQ%G")).status_code == 200:
                dlq = read_all(client, "%DLQ%G", 0)
        assert [m["body"] for m in dlq] == ["poison"]
    assert while_full.status_code == 200 and while_full.json()["messages"] == [], while_full.text


def test_a_check_back_answered_while_the_disk_is_full_is_applied_once_room_returns(small_disk: SmallDisk, start_broker) -> None:
    checks = CheckServer()
    checks.answer = lambda request: (200, b'{"state": "commit"}')
    broker = broker_on(start_broker, small_disk, HALFMQ_BROKER_TRANSACTION_TIMEOUT="0.5",
                       HALFMQ_BROKER_TRANSACTION_CHECK_INTERVAL="0.3", HALFMQ_BROKER_CHECK_TIMEOUT="1.0")
    try:
        with httpx.Client(base_url=broker.url, timeout=10) as client:
            client.post("/v1/topics", json={"name": TOPIC, "queues": 1}).raise_for_status()
            client.post("/v1/producers/heartbeat", json={"producer_group": "pg", "client_id": "c1",
                                                         "check_url": checks.url}).raise_for_status()
            resp = client.post("/v1/transactions", json={"producer_group": "pg", "topic": TOPIC, "message": {"body": "o1"}})
            txid = resp.json()["transaction_id"]
            small_disk.fill()
            wait_for(lambda: len(checks.calls) >= 2, timeout=15)
            assert client.get(f"/v1/transactions/{txid}").json()["state"] == "pending"
            small_disk.free()
            wait_for(lambda: client.get(f"/v1/transactions/{txid}").json()["state"] == "committed", timeout=15)
            assert [m["body"] for m in read_all(client, TOPIC, 0)] == ["o1"]
    finally:
        checks.close()
    assert "Traceback" not in log_of(broker)


def test_a_new_data_dir_on_a_full_disk_is_refused_in_one_line_with_exit_code_5(small_disk: SmallDisk, tmp_path) -> None:
    small_disk.fill()
    broker = BrokerProcess(small_disk.path / "data", tmp_path, TEST_BROKER_ENV)
    with pytest.raises(RuntimeError, match="exited with 5"):
        broker.start()
    output = log_of(broker)
    assert "Traceback" not in output
    assert [line for line in output.splitlines() if " ERROR " in line and "cannot start" in line], output
