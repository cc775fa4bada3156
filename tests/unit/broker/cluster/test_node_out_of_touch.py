"""A quorum leader that no majority of its set has fetched from for 3 lease TTLs steps down (Raft's CheckQuorum).

The node's own leader tick runs against a fake etcd that keeps its key (a leader cut off from its followers but not
from etcd), under a fake clock.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from halfmq.broker.cluster.decisions import Role
from halfmq.broker.cluster.etcd import KeyValue
from halfmq.broker.cluster.node import ClusterNode
from halfmq.broker.config import BrokerSettings
from halfmq.broker.grpc_front.front import LeaderFront
from halfmq.broker.runtime import BrokerRuntime, SetRoles
from tests.support.fake_clock import FakeClock

MEMBERS = "n1=http://127.0.0.1:8081,n2=http://127.0.0.1:8082,n3=http://127.0.0.1:8083"
TERM = 40


class KeptKey:
    """etcd as the cut-off leader still sees it: its own key, under its lease."""

    def __init__(self) -> None:
        self.leader = KeyValue("/t/leader", json.dumps({"node_id": "n1", "url": "http://127.0.0.1:8081"}).encode(), TERM, TERM, 77)

    async def get(self, key: str) -> KeyValue | None:
        return self.leader if key.endswith("/leader") else None

    async def put_if(self, key: str, value: str, lease: int, compares: list[dict[str, object]]) -> int | None:
        return TERM

    async def aclose(self) -> None:
        pass


async def _leader(tmp_path: Path, ack: str, clock: FakeClock) -> ClusterNode:
    settings = BrokerSettings(data_dir=tmp_path, grpc_port=0, cluster="etcd://127.0.0.1:2379/t", node_id="n1",
                              cluster_members=MEMBERS, ack=ack)
    etcd = KeptKey()
    roles = SetRoles(settings, SimpleNamespace(runtime=BrokerRuntime.open(settings)),
                     LeaderFront(settings.advertise_url, settings.grpc_port))
    node = ClusterNode(settings, roles, clock=clock, etcd=etcd, renewals=etcd)  # type: ignore[arg-type]
    node.standing.role, node.standing.term, node.lease.id, node.standing.leader = Role.LEADER, TERM, 77, {"node_id": "n1", "url": node.url}
    node.tracker.reset(frozenset({"n1", "n2", "n3"}))
    node.tracker.published(frozenset({"n1", "n2", "n3"}))
    return node


async def test_a_quorum_leader_nobody_fetched_from_for_three_ttls_steps_down_though_etcd_keeps_its_key(tmp_path: Path) -> None:
    clock = FakeClock(1_000.0)
    node = await _leader(tmp_path, "quorum", clock)
    try:
        clock.now += 3 * node.lease.fence.ttl - 0.1
        await node.tick()
        assert node.role is Role.LEADER  # not yet: its followers count as heard when the term began
        node.tracker.report("n2", 0, leader_end=0)
        clock.now += 3 * node.lease.fence.ttl - 0.1
        await node.tick()
        assert node.role is Role.LEADER  # n2 fetched within the window: with the leader, a majority
        clock.now += 0.2
        await node.tick()
        assert node.role is Role.FOLLOWER
    finally:
        node.store.close()


async def test_with_ack_leader_a_leader_alone_keeps_leading(tmp_path: Path) -> None:
    clock = FakeClock(1_000.0)
    node = await _leader(tmp_path, "leader", clock)
    try:
        clock.now += 10 * node.lease.fence.ttl
        await node.tick()
        assert node.role is Role.LEADER  # it acknowledges on its own disk: stepping down would only stop writes
    finally:
        node.store.close()
