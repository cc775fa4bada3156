"""What a single broker keeps survives a failover of the set: acks, empty topics and registered producers travel in the log."""

from __future__ import annotations

import httpx
import pytest

from tests.support.broker_set import BrokerSet
from tests.support.check_server import CheckServer
from tests.support.waiting import wait_for

pytestmark = pytest.mark.slow
FAST_CHECKS = {"HALFMQ_BROKER_TRANSACTION_TIMEOUT": "1.0", "HALFMQ_BROKER_TRANSACTION_CHECK_INTERVAL": "0.5"}
SET_ENV = FAST_CHECKS  # conftest's broker_set starts its nodes with these
MESSAGES = 3_000
BATCH = 32


def _receive(client: httpx.Client, url: str, wait: float = 0.0) -> list[dict]:
    answer = client.post(f"{url}/v1/consumer-groups/g/topics/PAID/receive",
                         json={"max_messages": BATCH, "invisible_seconds": 60, "wait_seconds": wait}, timeout=15)
    answer.raise_for_status()
    return list(answer.json()["messages"])


def _send_all(client: httpx.Client, url: str) -> None:
    for start in range(0, MESSAGES, 100):
        answer = client.post(f"{url}/v1/topics/PAID/messages",
                             json={"messages": [{"body": str(i)} for i in range(start, min(start + 100, MESSAGES))]}, timeout=15)
        answer.raise_for_status()
        assert {r["status"] for r in answer.json()["results"]} == {"SEND_OK"}


def _receive_and_ack_all(client: httpx.Client, url: str) -> set[str]:
    """Receive every message once and ack each batch; the bodies whose ack was answered OK."""
    acked: set[str] = set()
    while len(acked) < MESSAGES:
        got = _receive(client, url, wait=1.0)
        assert got, f"only {len(acked)} of {MESSAGES} messages were delivered"
        answer = client.post(f"{url}/v1/consumer-groups/g/topics/PAID/ack",
                             json={"receipt_handles": [m["receipt_handle"] for m in got]}, timeout=15)
        answer.raise_for_status()
        statuses = {r["receipt_handle"]: r["status"] for r in answer.json()["results"]}
        acked |= {m["body"] for m in got if statuses[m["receipt_handle"]] == "OK"}
    return acked


def test_an_ack_answered_before_kill_9_of_the_leader_is_never_delivered_again_by_the_new_leader(broker_set: BrokerSet) -> None:
    leader = broker_set.leader()
    url = broker_set.nodes[leader].url
    with httpx.Client() as client:
        client.post(f"{url}/v1/topics", json={"name": "PAID", "queues": 4}, timeout=10).raise_for_status()
        _send_all(client, url)
        acked = _receive_and_ack_all(client, url)
        broker_set.nodes[leader].kill9()  # at once: no time for any periodic copy
        new_url = broker_set.nodes[broker_set.leader(timeout=30, not_=leader)].url
        again: list[str] = []
        while got := _receive(client, new_url, wait=2.0):
            again += [m["body"] for m in got]
    redelivered = acked & set(again)
    print(f"acked {len(acked)} before the kill; delivered again by the new leader: {len(redelivered)}")
    assert len(acked) == MESSAGES
    assert len(redelivered) == 0


def test_an_empty_topic_created_on_the_leader_exists_with_its_queue_count_on_the_new_leader(broker_set: BrokerSet) -> None:
    leader = broker_set.leader()
    url = broker_set.nodes[leader].url
    created = httpx.post(f"{url}/v1/topics", json={"name": "EMPTY", "queues": 7}, timeout=10)
    assert created.status_code in (200, 201), created.text
    broker_set.nodes[leader].kill9()
    new_url = broker_set.nodes[broker_set.leader(timeout=30, not_=leader)].url
    topic = httpx.get(f"{new_url}/v1/topics/EMPTY", timeout=10)
    assert topic.status_code == 200, topic.text
    assert len(topic.json()["queues"]) == 7


def test_a_registered_producer_is_checked_back_by_the_new_leader_without_a_new_heartbeat(
        broker_set: BrokerSet, checks: CheckServer) -> None:
    leader = broker_set.leader()
    url = broker_set.nodes[leader].url
    httpx.post(f"{url}/v1/topics", json={"name": "ORDERS", "queues": 1}, timeout=10).raise_for_status()
    heartbeat = {"producer_group": "pg", "client_id": "c1", "check_url": checks.url}
    assert httpx.post(f"{url}/v1/producers/heartbeat", json=heartbeat, timeout=10).status_code == 200
    half = httpx.post(f"{url}/v1/transactions", json={"producer_group": "pg", "topic": "ORDERS", "message": {"body": "pending"}},
                      timeout=10)
    half.raise_for_status()
    transaction_id = half.json()["transaction_id"]
    broker_set.nodes[leader].kill9()  # the producer is never heard from again (the old leader's checks got "unknown")
    new_url = broker_set.nodes[broker_set.leader(timeout=30, not_=leader)].url
    checks.answer_state("commit")  # from here a check-back commits it: only the new leader can make one
    wait_for(lambda: httpx.get(f"{new_url}/v1/transactions/{transaction_id}", timeout=5).json()["state"] == "committed", timeout=30)
    assert checks.calls_for(transaction_id)
