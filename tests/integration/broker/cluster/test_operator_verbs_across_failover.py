"""An operator's verbs written as state records survive a failover of the set: the leader answered once the record was
durable, then is kill -9'd, and the new leader (which rebuilt its state from the log) shows the verb's effect."""

from __future__ import annotations

import httpx
import pytest

from tests.integration.broker.http_helpers import path
from tests.support.broker_set import BrokerSet

pytestmark = pytest.mark.slow


def _consumed(client: httpx.Client, group: str, topic: str, n: int = 3) -> None:
    client.post("/v1/topics", json={"name": topic, "queues": 1}).raise_for_status()
    sent = client.post(path("v1", "topics", topic, "messages"), json={"messages": [{"body": f"m{i}"} for i in range(n)]})
    sent.raise_for_status()
    got = _receive(client, group, topic)
    client.post(path("v1", "consumer-groups", group, "topics", topic, "ack"),
                json={"receipt_handles": [m["receipt_handle"] for m in got]}).raise_for_status()


def _receive(client: httpx.Client, group: str, topic: str) -> list[dict]:
    got = client.post(path("v1", "consumer-groups", group, "topics", topic, "receive"),
                      json={"max_messages": 64, "invisible_seconds": 60, "wait_seconds": 0})
    got.raise_for_status()
    return list(got.json()["messages"])


def _new_leader(broker_set: BrokerSet, leader: str) -> httpx.Client:
    broker_set.nodes[leader].kill9()
    return httpx.Client(base_url=broker_set.nodes[broker_set.leader(timeout=30, not_=leader)].url, timeout=15)


def test_an_offset_reset_is_seen_by_the_new_leader(broker_set: BrokerSet) -> None:
    leader = broker_set.leader()
    with httpx.Client(base_url=broker_set.nodes[leader].url, timeout=15) as client:
        _consumed(client, "g", "RESET")
        reset = client.post(path("v1", "consumer-groups", "g", "topics", "RESET", "reset-offsets"), json={"to": "earliest"})
        assert reset.status_code == 200, reset.text
    with _new_leader(broker_set, leader) as client:
        assert [m["body"] for m in _receive(client, "g", "RESET")] == ["m0", "m1", "m2"]


def test_a_group_deletion_is_seen_by_the_new_leader(broker_set: BrokerSet) -> None:
    leader = broker_set.leader()
    with httpx.Client(base_url=broker_set.nodes[leader].url, timeout=15) as client:
        _consumed(client, "old", "GROUPS")
        client.delete(path("v1", "consumer-groups", "old")).raise_for_status()
    with _new_leader(broker_set, leader) as client:
        assert "old" not in [g["group"] for g in client.get("/v1/consumer-groups").json()["groups"]]
        assert [m["body"] for m in _receive(client, "old", "GROUPS")] == ["m0", "m1", "m2"]


def test_a_topic_deletion_is_seen_by_the_new_leader(broker_set: BrokerSet) -> None:
    leader = broker_set.leader()
    with httpx.Client(base_url=broker_set.nodes[leader].url, timeout=15) as client:
        _consumed(client, "g", "DOOMED")
        client.delete(path("v1", "topics", "DOOMED")).raise_for_status()
    with _new_leader(broker_set, leader) as client:
        assert "DOOMED" not in [t["name"] for t in client.get("/v1/topics").json()["topics"]]
        assert client.get(path("v1", "topics", "DOOMED")).json()["code"] == "TOPIC_NOT_FOUND"
        client.post("/v1/topics", json={"name": "DOOMED", "queues": 1}).raise_for_status()
        assert client.get(path("v1", "topics", "DOOMED", "queues", 0, "messages")).json()["messages"] == []
        assert _receive(client, "fresh", "DOOMED") == []
