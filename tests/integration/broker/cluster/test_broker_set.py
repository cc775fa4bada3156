"""A broker set of three real brokers on a real etcd: election, byte-for-byte replication, NOT_LEADER, failover."""

from __future__ import annotations

import httpx
import pytest

from tests.support.broker_set import BrokerSet

pytestmark = pytest.mark.slow


def _send(url: str, bodies: list[str]) -> list[dict]:
    answer = httpx.post(f"{url}/v1/topics/orders/messages", json={"messages": [{"body": b} for b in bodies]}, timeout=10)
    assert answer.status_code == 200, answer.text
    return answer.json()["results"]


def _read_all(url: str) -> list[str]:
    bodies = []
    topic = httpx.get(f"{url}/v1/topics/orders", timeout=5).json()
    for queue in topic["queues"]:
        answer = httpx.get(f"{url}/v1/topics/orders/queues/{queue['queue_id']}/messages", params={"offset": 0, "max": 1000}, timeout=5)
        bodies += [m["body"] for m in answer.json()["messages"]]
    return bodies


def test_a_set_elects_one_leader_whose_log_the_followers_hold_byte_for_byte(broker_set: BrokerSet) -> None:
    leader = broker_set.leader()
    url = broker_set.nodes[leader].url
    results = [r for i in range(20) for r in _send(url, [f"m{i}-{j}" for j in range(5)])]
    assert {r["status"] for r in results} == {"SEND_OK"}
    broker_set.caught_up()
    follower = next(n for n in broker_set.nodes if n != leader)
    assert broker_set.log_bytes(follower) == broker_set.log_bytes(leader)
    view = broker_set.view(leader)
    assert view is not None and view["role"] == "leader" and len(view["in_sync"]) == 3
    assert {n["node_id"]: n["role"] for n in view["nodes"]} == {n: ("leader" if n == leader else "follower") for n in broker_set.nodes}
    refused = httpx.post(f"{broker_set.nodes[follower].url}/v1/topics/orders/messages", json={"messages": [{"body": "x"}]})
    assert refused.status_code == 421
    assert refused.json()["code"] == "NOT_LEADER" and refused.json()["leader_url"] == url


def test_after_kill_9_of_the_leader_another_node_leads_with_every_acknowledged_message(broker_set: BrokerSet) -> None:
    leader = broker_set.leader()
    acked = [r for i in range(10) for r in _send(broker_set.nodes[leader].url, [f"m{i}-{j}" for j in range(3)])]
    assert len(acked) == 30
    broker_set.nodes[leader].kill9()
    new = broker_set.leader(timeout=20, not_=leader)
    url = broker_set.nodes[new].url
    assert sorted(_read_all(url)) == sorted(f"m{i}-{j}" for i in range(10) for j in range(3))
    assert {r["status"] for r in _send(url, ["after"])} == {"SEND_OK"}
    broker_set.nodes[leader].start(timeout=60)  # the old leader comes back as a follower and catches up
    broker_set.caught_up()
    assert broker_set.log_bytes(leader) == broker_set.log_bytes(new)
    view = broker_set.view(leader)
    assert view is not None and view["role"] == "follower"


def test_a_write_group_larger_than_a_stream_run_is_replicated_whole(broker_set: BrokerSet) -> None:
    """A run is 256 KiB at most, a follower appends whole write groups only: a larger group goes in one run of its own
    (before, the leader pushed its first 256 KiB, the follower took none of it, and every quorum send timed out)."""
    leader = broker_set.leader()
    big = [f"{i}" * 200_000 for i in range(3)]  # one batch: one write group of ~600 KB
    assert {r["status"] for r in _send(broker_set.nodes[leader].url, big)} == {"SEND_OK"}
    assert {r["status"] for r in _send(broker_set.nodes[leader].url, ["after"])} == {"SEND_OK"}
    broker_set.caught_up()
    follower = next(n for n in broker_set.nodes if n != leader)
    assert broker_set.log_bytes(follower) == broker_set.log_bytes(leader)
