"""Deleting a topic against a real broker process: gone from every view, refused while in use, kept across kill -9."""

from __future__ import annotations

import time

import httpx
import pytest

from tests.support.processes import BrokerProcess

from .http_helpers import path, read_all, receive, send, settle


@pytest.fixture
def client(broker: BrokerProcess):
    with httpx.Client(base_url=broker.url, timeout=15) as c:
        yield c


def topics(client: httpx.Client) -> list[str]:
    return [t["name"] for t in client.get("/v1/topics").json()["topics"]]


def consumed(client: httpx.Client, group: str, topic: str, n: int = 3) -> None:
    client.post("/v1/topics", json={"name": topic, "queues": 1}).raise_for_status()
    send(client, topic, *[f"m{i}" for i in range(n)])
    got = receive(client, group, topic, n=64)
    settle(client, "ack", group, topic, [m["receipt_handle"] for m in got])


def half(client: httpx.Client, topic: str, body: str) -> str:
    resp = client.post("/v1/transactions", json={"producer_group": "pg", "topic": topic, "message": {"body": body}})
    resp.raise_for_status()
    return resp.json()["transaction_id"]


def test_a_deleted_topic_is_no_longer_listed_described_or_read(client: httpx.Client) -> None:
    consumed(client, "g", "GONE")
    deleted = client.delete(path("v1", "topics", "GONE"))
    assert deleted.status_code == 200, deleted.text
    assert deleted.json() == {"topic": "GONE", "queue_ends": [3], "pending_halves": 0, "in_flight": 0}
    assert "GONE" not in topics(client)
    assert client.get(path("v1", "topics", "GONE")).json()["code"] == "TOPIC_NOT_FOUND"
    read = client.get(path("v1", "topics", "GONE", "queues", 0, "messages"))
    assert (read.status_code, read.json()["code"]) == (404, "TOPIC_NOT_FOUND")
    # the group consumed nothing else: nothing is left of it
    assert client.get(path("v1", "consumer-groups", "g")).json()["code"] == "CONSUMER_GROUP_NOT_FOUND"


def test_a_topic_created_again_under_the_name_starts_empty(client: httpx.Client) -> None:
    consumed(client, "g", "AGAIN")
    send(client, "AGAIN", "unread", keys=["k-old"])
    assert len(client.get("/v1/messages", params={"key": "k-old", "topic": "AGAIN"}).json()["messages"]) == 1
    client.delete(path("v1", "topics", "AGAIN")).raise_for_status()
    client.post("/v1/topics", json={"name": "AGAIN", "queues": 1}).raise_for_status()
    assert read_all(client, "AGAIN", 0) == []
    send(client, "AGAIN", "new")
    assert [m["body"] for m in read_all(client, "AGAIN", 0)] == ["new"]
    assert [m["body"] for m in receive(client, "fresh", "AGAIN", n=64)] == ["new"]
    assert [m["body"] for m in receive(client, "g", "AGAIN", n=64)] == ["new"]
    old_key = client.get("/v1/messages", params={"key": "k-old", "topic": "AGAIN"}).json()
    assert old_key["messages"] == []  # the deleted topic's messages are not found under the name either


def test_a_pending_half_refuses_the_deletion_unless_forced(client: httpx.Client) -> None:
    client.post("/v1/topics", json={"name": "HALVES", "queues": 1}).raise_for_status()
    half(client, "HALVES", "not yet")
    refused = client.delete(path("v1", "topics", "HALVES"))
    assert (refused.status_code, refused.json()["code"]) == (409, "TOPIC_IN_USE")
    assert "HALVES" in topics(client)
    forced = client.delete(path("v1", "topics", "HALVES"), params={"force": "true"})
    assert forced.status_code == 200, forced.text
    assert forced.json()["pending_halves"] == 1
    assert "HALVES" not in topics(client)


def test_deliveries_in_flight_refuse_the_deletion_unless_forced(client: httpx.Client) -> None:
    client.post("/v1/topics", json={"name": "HELD", "queues": 1}).raise_for_status()
    send(client, "HELD", "a", "b")
    held = receive(client, "g", "HELD", n=1)
    refused = client.delete(path("v1", "topics", "HELD"))
    assert (refused.status_code, refused.json()["code"]) == (409, "TOPIC_IN_USE")
    assert [m["body"] for m in read_all(client, "HELD", 0)] == ["a", "b"]
    forced = client.delete(path("v1", "topics", "HELD"), params={"force": "true"})
    assert forced.json()["in_flight"] == 1
    assert settle(client, "ack", "g", "HELD", [held[0]["receipt_handle"]]) == ["EXPIRED"]


def test_an_unknown_topic_a_system_topic_or_a_bad_flag_is_a_problem(client: httpx.Client) -> None:
    assert client.delete(path("v1", "topics", "NOPE")).json()["code"] == "TOPIC_NOT_FOUND"
    system = client.delete(path("v1", "topics", "HALFMQ_TXN_STATE"))
    assert (system.status_code, system.json()["code"]) == (403, "SYSTEM_TOPIC_FORBIDDEN")
    assert client.delete(path("v1", "topics", "NOPE"), params={"force": "maybe"}).status_code == 400


@pytest.mark.parametrize("checkpointed", [False, True], ids=["kill-9-at-once", "kill-9-after-the-checkpoints"])
def test_a_deletion_survives_kill_9(start_broker, checkpointed: bool) -> None:
    broker: BrokerProcess = start_broker({"HALFMQ_BROKER_OFFSET_FLUSH_INTERVAL": "0.2"})
    with httpx.Client(base_url=broker.url, timeout=15) as client:
        consumed(client, "g", "KEPT")
        time.sleep(1.0)  # the offsets file and the acks checkpoint name the topic
        client.delete(path("v1", "topics", "KEPT")).raise_for_status()
        if checkpointed:
            consumed(client, "other", "KEPT2")  # later acks: the acks checkpoint is taken after the deletion
            time.sleep(1.0)
    broker.kill9()
    broker.start()
    with httpx.Client(base_url=broker.url, timeout=15) as client:
        assert "KEPT" not in topics(client)
        client.post("/v1/topics", json={"name": "KEPT", "queues": 1}).raise_for_status()
        assert read_all(client, "KEPT", 0) == []
        assert receive(client, "g", "KEPT", n=64) == []


def test_a_group_consuming_the_topic_made_again_keeps_its_new_offsets_across_kill_9(start_broker) -> None:
    broker: BrokerProcess = start_broker({"HALFMQ_BROKER_OFFSET_FLUSH_INTERVAL": "0.2"})
    with httpx.Client(base_url=broker.url, timeout=15) as client:
        consumed(client, "g", "REMADE")
        client.delete(path("v1", "topics", "REMADE")).raise_for_status()
        consumed(client, "g", "REMADE", n=2)
        send(client, "REMADE", "later")
        time.sleep(1.0)  # the acks checkpoint holds the group's new offset, after the deletion's record
    broker.kill9()
    broker.start()
    with httpx.Client(base_url=broker.url, timeout=15) as client:
        assert [m["body"] for m in receive(client, "g", "REMADE", n=64)] == ["later"]


def test_only_an_admin_of_the_topic_may_delete_it(as_) -> None:
    admin, order, credit, mallory = as_("admin"), as_("order"), as_("credit"), as_("mallory")
    admin.post("/v1/topics", json={"name": "ORDER_TOPIC", "queues": 1}).raise_for_status()
    send(admin, "ORDER_TOPIC", "a")
    for who in (order, credit, mallory):
        refused = who.delete(path("v1", "topics", "ORDER_TOPIC"))
        assert (refused.status_code, refused.json()["code"]) == (403, "ACCESS_DENIED")
    assert "ORDER_TOPIC" in topics(admin)
    assert [m["body"] for m in read_all(admin, "ORDER_TOPIC", 0)] == ["a"]
    assert admin.delete(path("v1", "topics", "ORDER_TOPIC")).status_code == 200
    assert "ORDER_TOPIC" not in topics(admin)


def test_a_timer_of_a_deleted_topic_comes_due_into_nothing(client: httpx.Client) -> None:
    client.post("/v1/topics", json={"name": "LATER", "queues": 1}).raise_for_status()
    send(client, "LATER", "soon", delay_ms=1500)
    client.delete(path("v1", "topics", "LATER")).raise_for_status()
    client.post("/v1/topics", json={"name": "LATER", "queues": 1}).raise_for_status()
    time.sleep(3.0)  # well past its due time: the timer is released (the broker's timers are checked often)
    assert read_all(client, "LATER", 0) == []
    client.delete(path("v1", "topics", "LATER")).raise_for_status()
    send(client, "OTHER", "x", delay_ms=10)  # auto-created; a later release proves the release service is past LATER's
    time.sleep(1.0)
    assert "LATER" not in topics(client)
