"""Deleting a consumer group against a real broker process: refused while it holds deliveries, kept across kill -9."""

from __future__ import annotations

import time

import httpx
import pytest

from tests.support.processes import BrokerProcess

from .http_helpers import path, receive, send, settle


@pytest.fixture
def client(broker: BrokerProcess):
    with httpx.Client(base_url=broker.url, timeout=15) as c:
        yield c


def consumed(client: httpx.Client, group: str, topic: str, n: int = 3) -> None:
    client.post("/v1/topics", json={"name": topic, "queues": 1}).raise_for_status()
    send(client, topic, *[f"m{i}" for i in range(n)])
    got = receive(client, group, topic, n=64)
    settle(client, "ack", group, topic, [m["receipt_handle"] for m in got])


def groups(client: httpx.Client) -> list[str]:
    return [g["group"] for g in client.get("/v1/consumer-groups").json()["groups"]]


def test_a_deleted_group_is_gone_and_a_receive_begins_it_again_at_the_start(client: httpx.Client) -> None:
    consumed(client, "old", "GONE")
    deleted = client.delete(path("v1", "consumer-groups", "old"))
    assert deleted.status_code == 200, deleted.text
    assert deleted.json() == {"group": "old", "topics": ["GONE"], "in_flight": 0}
    assert "old" not in groups(client)
    assert client.get(path("v1", "consumer-groups", "old")).json()["code"] == "CONSUMER_GROUP_NOT_FOUND"
    assert [m["body"] for m in receive(client, "old", "GONE", n=64)] == ["m0", "m1", "m2"]


def test_deliveries_in_flight_refuse_the_deletion_unless_forced(client: httpx.Client) -> None:
    client.post("/v1/topics", json={"name": "HELD", "queues": 1}).raise_for_status()
    send(client, "HELD", "a", "b")
    held = receive(client, "g", "HELD", n=1)
    refused = client.delete(path("v1", "consumer-groups", "g"))
    assert (refused.status_code, refused.json()["code"]) == (409, "GROUP_HAS_DELIVERIES_IN_FLIGHT")
    assert "g" in groups(client)
    forced = client.delete(path("v1", "consumer-groups", "g"), params={"force": "true"})
    assert forced.json()["in_flight"] == 1
    assert settle(client, "ack", "g", "HELD", [held[0]["receipt_handle"]]) == ["EXPIRED"]


def test_an_unknown_group_or_a_bad_name_is_a_problem(client: httpx.Client) -> None:
    assert client.delete(path("v1", "consumer-groups", "nobody")).json()["code"] == "CONSUMER_GROUP_NOT_FOUND"
    assert client.delete(path("v1", "consumer-groups", "nobody"), params={"force": "maybe"}).status_code == 400


@pytest.mark.parametrize("checkpointed", [False, True], ids=["kill-9-at-once", "kill-9-after-the-checkpoints"])
def test_a_deletion_survives_kill_9(start_broker, checkpointed: bool) -> None:
    broker: BrokerProcess = start_broker({"HALFMQ_BROKER_OFFSET_FLUSH_INTERVAL": "0.2"})
    with httpx.Client(base_url=broker.url, timeout=15) as client:
        consumed(client, "old", "KEPT")
        time.sleep(1.0)  # the offsets file and the acks checkpoint name the group
        client.delete(path("v1", "consumer-groups", "old")).raise_for_status()
        if checkpointed:
            consumed(client, "other", "KEPT2")  # later acks: the acks checkpoint is taken after the deletion
            time.sleep(1.0)
    broker.kill9()
    broker.start()
    with httpx.Client(base_url=broker.url, timeout=15) as client:
        assert "old" not in groups(client)
        assert [m["body"] for m in receive(client, "old", "KEPT", n=64)] == ["m0", "m1", "m2"]


def test_a_group_consuming_again_after_its_deletion_keeps_its_new_offsets_across_kill_9(start_broker) -> None:
    broker: BrokerProcess = start_broker({"HALFMQ_BROKER_OFFSET_FLUSH_INTERVAL": "0.2"})
    with httpx.Client(base_url=broker.url, timeout=15) as client:
        consumed(client, "g", "AGAIN")
        client.delete(path("v1", "consumer-groups", "g")).raise_for_status()
        got = receive(client, "g", "AGAIN", n=2)
        settle(client, "ack", "g", "AGAIN", [m["receipt_handle"] for m in got])
        time.sleep(1.0)  # the acks checkpoint holds the group again, after the deletion's record
    broker.kill9()
    broker.start()
    with httpx.Client(base_url=broker.url, timeout=15) as client:
        assert [m["body"] for m in receive(client, "g", "AGAIN", n=64)] == ["m2"]


def test_only_an_admin_of_the_group_may_delete_it(as_) -> None:
    admin, credit, mallory = as_("admin"), as_("credit"), as_("mallory")
    admin.post("/v1/topics", json={"name": "ORDER_TOPIC", "queues": 1}).raise_for_status()
    send(admin, "ORDER_TOPIC", "a")
    got = receive(credit, "credit_group", "ORDER_TOPIC")
    settle(credit, "ack", "credit_group", "ORDER_TOPIC", [m["receipt_handle"] for m in got])
    for who in (credit, mallory):
        refused = who.delete(path("v1", "consumer-groups", "credit_group"))
        assert (refused.status_code, refused.json()["code"]) == (403, "ACCESS_DENIED")
    assert "credit_group" in groups(admin)
    assert admin.delete(path("v1", "consumer-groups", "credit_group")).status_code == 200
    assert "credit_group" not in groups(admin)


def test_past_the_bound_on_consumer_groups_a_receive_is_refused_with_its_code_until_a_group_is_deleted(start_broker) -> None:
    broker = start_broker({"HALFMQ_BROKER_MAX_CONSUMER_GROUPS": "2"})
    with httpx.Client(base_url=broker.url, timeout=15) as client:
        consumed(client, "first", "BOUND")
        consumed(client, "second", "BOUND2")
        refused = client.post(path("v1", "consumer-groups", "third", "topics", "BOUND", "receive"), json={"wait_seconds": 0})
        assert refused.status_code == 429 and refused.json()["code"] == "TOO_MANY_CONSUMER_GROUPS", refused.text
        assert "third" not in groups(client)
        assert client.delete(path("v1", "consumer-groups", "first")).status_code == 200
        assert [m["body"] for m in receive(client, "third", "BOUND", n=64)] == ["m0", "m1", "m2"]
