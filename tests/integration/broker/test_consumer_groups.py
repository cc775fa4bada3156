"""Pop consumption against a real broker process."""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from tests.support.processes import BrokerProcess

from .http_helpers import group_state, path, read_all, receive, send, settle


@pytest.fixture
def client(broker: BrokerProcess):
    with httpx.Client(base_url=broker.url, timeout=15) as c:
        yield c


def make_topic(client: httpx.Client, name: str, queues: int = 2) -> None:
    client.post("/v1/topics", json={"name": name, "queues": queues}).raise_for_status()


def test_invisibility_expiry_redelivers_with_a_higher_attempt(client: httpx.Client) -> None:
    make_topic(client, "VIS", 1)
    send(client, "VIS", "only")
    first = receive(client, "g", "VIS", invisible=1)
    assert [m["body"] for m in first] == ["only"] and first[0]["delivery_attempt"] == 1
    assert receive(client, "g", "VIS", invisible=1) == []  # invisible to the group meanwhile
    again = receive(client, "g", "VIS", invisible=30, wait=3)
    assert [m["body"] for m in again] == ["only"] and again[0]["delivery_attempt"] == 2
    assert settle(client, "ack", "g", "VIS", [first[0]["receipt_handle"]]) == ["EXPIRED"]
    assert settle(client, "ack", "g", "VIS", [again[0]["receipt_handle"]]) == ["OK"]
    assert group_state(client, "g")["VIS"][0]["committed_offset"] == 1


def test_nacked_message_is_retried_then_moved_to_the_dlq(client: httpx.Client) -> None:
    # conftest's broker: MAX_RECONSUME_TIMES=3, RETRY_DELAYS=0.2,0.4
    make_topic(client, "POISON", 1)
    send(client, "POISON", "bad", keys=["k-bad"])
    send(client, "POISON", "good")
    attempts = []
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        for m in receive(client, "g", "POISON", wait=1):
            if m["body"] == "good":
                settle(client, "ack", "g", "POISON", [m["receipt_handle"]])
            else:
                attempts.append(m["delivery_attempt"])
                settle(client, "nack", "g", "POISON", [m["receipt_handle"]])
        dlq = read_all(client, "%DLQ%g", 0) if client.get(path("v1", "topics", "%DLQ%g")).status_code == 200 else []
        if dlq:
            break
    assert attempts == [1, 2, 3, 4]
    assert [m["body"] for m in dlq] == ["bad"]
    assert dlq[0]["properties"]["REAL_TOPIC"] == "POISON"
    assert dlq[0]["properties"]["RECONSUME_TIME"] == "3"
    assert dlq[0]["keys"] == ["k-bad"]
    assert receive(client, "g", "POISON", wait=1) == []
    assert group_state(client, "g")["POISON"][0]["committed_offset"] == 2


def test_nack_backoff_delays_the_next_delivery(client: httpx.Client) -> None:
    make_topic(client, "BACKOFF", 1)
    send(client, "BACKOFF", "x")
    m = receive(client, "g", "BACKOFF")[0]
    nacked_at = time.monotonic()
    settle(client, "nack", "g", "BACKOFF", [m["receipt_handle"]])
    assert receive(client, "g", "BACKOFF") == []
    again = receive(client, "g", "BACKOFF", wait=5)
    assert time.monotonic() - nacked_at >= 0.15  # first retry delay is 0.2 s
    assert again[0]["delivery_attempt"] == 2


def test_two_consumers_of_one_group_split_the_messages_without_overlap(client: httpx.Client, broker: BrokerProcess) -> None:
    make_topic(client, "SPLIT", 4)
    bodies = [f"m{i}" for i in range(300)]
    for i in range(0, 300, 50):
        send(client, "SPLIT", *bodies[i : i + 50])
    seen: dict[str, list[str]] = {"a": [], "b": []}
    both_ready = threading.Barrier(2)

    def consume(name: str) -> None:
        with httpx.Client(base_url=broker.url, timeout=15) as c:
            both_ready.wait(10)
            idle = 0
            while idle < 3:
                got = receive(c, "shared", "SPLIT", n=7, invisible=60, wait=0.3)
                if not got:
                    idle += 1
                    continue
                idle = 0
                seen[name].extend(m["body"] for m in got)
                time.sleep(0.01)  # a little work, so neither consumer can drain the topic alone
                settle(c, "ack", "shared", "SPLIT", [m["receipt_handle"] for m in got])

    threads = [threading.Thread(target=consume, args=(n,)) for n in seen]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not set(seen["a"]) & set(seen["b"])
    assert sorted(seen["a"] + seen["b"]) == sorted(bodies)
    assert seen["a"] and seen["b"], "one consumer got everything: the split was not exercised"
    assert all(q["lag"] == 0 for q in group_state(client, "shared")["SPLIT"])


def test_each_group_gets_every_message(client: httpx.Client) -> None:
    make_topic(client, "FANOUT", 2)
    send(client, "FANOUT", *[f"m{i}" for i in range(20)])
    for group in ("g1", "g2"):
        got = receive(client, group, "FANOUT", n=100)
        assert sorted(m["body"] for m in got) == sorted(f"m{i}" for i in range(20))


def test_offset_reads_do_not_touch_group_state(client: httpx.Client) -> None:
    make_topic(client, "PEEK", 1)
    send(client, "PEEK", "a", "b")
    assert len(read_all(client, "PEEK", 0)) == 2
    assert [m["body"] for m in receive(client, "g", "PEEK", n=10)] == ["a", "b"]


def test_long_poll_returns_as_soon_as_a_message_arrives(client: httpx.Client, broker: BrokerProcess) -> None:
    make_topic(client, "POLL", 1)
    timer = threading.Timer(0.5, lambda: send(httpx.Client(base_url=broker.url), "POLL", "late"))
    timer.start()
    started = time.monotonic()
    got = receive(client, "g", "POLL", wait=10)
    assert [m["body"] for m in got] == ["late"]
    assert time.monotonic() - started < 5


@pytest.mark.parametrize("how", ["sigterm", "kill9"])
def test_acked_progress_survives_a_broker_restart(broker: BrokerProcess, how: str) -> None:
    with httpx.Client(base_url=broker.url, timeout=15) as client:
        make_topic(client, "DURABLE", 1)
        send(client, "DURABLE", *[f"m{i:03d}" for i in range(100)])
        first = receive(client, "g", "DURABLE", n=50)
        assert settle(client, "ack", "g", "DURABLE", [m["receipt_handle"] for m in first]) == ["OK"] * 50
        unacked = receive(client, "g", "DURABLE", n=10)  # in flight at the crash: must come back
        time.sleep(0.6)  # > the test broker's 0.2 s offset snapshot interval
    if how == "kill9":
        broker.kill9()
        broker.start()
    else:
        broker.restart()
    with httpx.Client(base_url=broker.url, timeout=15) as client:
        assert group_state(client, "g")["DURABLE"][0]["committed_offset"] == 50
        after = receive(client, "g", "DURABLE", n=100)
        assert [m["body"] for m in after] == [f"m{i:03d}" for i in range(50, 100)]
        assert {m["body"] for m in unacked} <= {m["body"] for m in after}
        assert settle(client, "ack", "g", "DURABLE", [unacked[0]["receipt_handle"]]) == ["EXPIRED"]


def test_messages_for_a_long_poller_that_hung_up_are_handed_back_at_once(client: httpx.Client, broker: BrokerProcess) -> None:
    import socket

    make_topic(client, "HANGUP", 1)
    body = b'{"max_messages": 1, "invisible_seconds": 300, "wait_seconds": 10}'
    with socket.create_connection(("127.0.0.1", broker.port)) as sock:
        sock.sendall(
            b"POST /v1/consumer-groups/g/topics/HANGUP/receive HTTP/1.1\r\nHost: localhost\r\ncontent-type: application/json\r\n"
            + f"content-length: {len(body)}\r\n\r\n".encode() + body
        )
        time.sleep(0.3)
    time.sleep(0.2)
    send(client, "HANGUP", "orphan")  # wakes the abandoned long poll, which finds its client gone
    got = receive(client, "g", "HANGUP", wait=3)
    assert [m["body"] for m in got] == ["orphan"]
    assert got[0]["delivery_attempt"] == 1
