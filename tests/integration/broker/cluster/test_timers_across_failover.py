"""Timers across a failover of the set: the new leader's index came from the same log, so it releases what the
old leader had not, none early, none twice in the log, none lost."""

from __future__ import annotations

import time

import httpx
import pytest

from tests.support.broker_set import BrokerSet
from tests.support.timer_checker import check

pytestmark = pytest.mark.slow
TIMERS = 300


def _receive_and_ack(client: httpx.Client, url: str) -> list[tuple[str, int]]:
    answer = client.post(f"{url}/v1/consumer-groups/g/topics/TIMED/receive",
                         json={"max_messages": 32, "invisible_seconds": 60, "wait_seconds": 0.5}, timeout=15)
    answer.raise_for_status()
    got = answer.json()["messages"]
    at = int(time.time() * 1000)
    if got:
        client.post(f"{url}/v1/consumer-groups/g/topics/TIMED/ack",
                    json={"receipt_handles": [m["receipt_handle"] for m in got]}, timeout=15).raise_for_status()
    return [(m["body"], at) for m in got]


def test_timers_due_across_a_kill_9_of_the_leader_are_released_by_the_new_leader_once_and_never_early(broker_set: BrokerSet) -> None:
    leader = broker_set.leader()
    url = broker_set.nodes[leader].url
    due: dict[str, int] = {}
    received: list[tuple[str, int]] = []
    with httpx.Client() as client:
        client.post(f"{url}/v1/topics", json={"name": "TIMED", "queues": 2}, timeout=10).raise_for_status()
        start = int(time.time() * 1000)
        for batch in range(0, TIMERS, 50):
            messages = [{"body": f"t{i}", "deliver_at_ms": start + 2_000 + 20 * i} for i in range(batch, batch + 50)]
            client.post(f"{url}/v1/topics/TIMED/messages", json={"messages": messages}, timeout=15).raise_for_status()
            due.update((m["body"], m["deliver_at_ms"]) for m in messages)
        while time.time() * 1000 < start + 2_000 + 20 * TIMERS // 3:  # about a third released by the first leader
            received += _receive_and_ack(client, url)
        broker_set.nodes[leader].kill9()
        new_url = broker_set.nodes[broker_set.leader(timeout=30, not_=leader)].url
        deadline = time.time() + 30
        while time.time() < deadline and not set(due) <= {body for body, _ in received}:
            received += _receive_and_ack(client, new_url)
        stored = [m for q in range(2) for m in _read_all(client, new_url, q)]
    report = check(due, due, [(m["body"], m["store_timestamp"]) for m in stored], received)
    print(f"\ntimers across a failover: {report}; {len(received)} deliveries")
    assert (report.early, report.lost, report.released_twice, report.unexpected) == (0, 0, 0, 0), report


def _read_all(client: httpx.Client, url: str, queue_id: int) -> list[dict]:
    out: list[dict] = []
    while True:
        answer = client.get(f"{url}/v1/topics/TIMED/queues/{queue_id}/messages", params={"offset": len(out), "max": 500}, timeout=15)
        answer.raise_for_status()
        if not answer.json()["messages"]:
            return out
        out += answer.json()["messages"]
