"""What /v1/cluster's ``last_failover`` says: the last change of leader the answering node saw (who, after whom, term, when)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from halfmq.broker.cluster.node import ClusterNode
from halfmq.broker.config import BrokerSettings


def _node(tmp_path: Path, node_id: str = "n1") -> ClusterNode:
    settings = BrokerSettings(data_dir=tmp_path, grpc_port=0, cluster="etcd://127.0.0.1:2379/t", node_id=node_id,
                              cluster_members=["n1=http://127.0.0.1:8081", "n2=http://127.0.0.1:8082", "n3=http://127.0.0.1:8083"])
    return ClusterNode(settings, SimpleNamespace(), wall_clock=lambda: 1700000000.5)  # type: ignore[arg-type]


def test_a_follower_that_finds_a_leader_at_start_saw_no_failover(tmp_path: Path) -> None:
    node = _node(tmp_path)
    node.takeover.saw_leader(3, "n2")
    node.takeover.saw_leader(3, "n2")
    assert node.last_failover is None


def test_a_follower_sees_a_failover_when_the_leader_it_follows_changes(tmp_path: Path) -> None:
    node = _node(tmp_path)
    node.takeover.saw_leader(3, "n2")
    node.takeover.saw_leader(9, "n3")
    assert node.last_failover == {"term": 9, "leader": "n3", "previous": "n2", "timestamp": 1700000000500}


def test_a_nodes_own_election_is_a_failover_after_the_leader_whose_lease_expired(tmp_path: Path) -> None:
    first = _node(tmp_path)
    first.takeover.saw_leader(2, "n1")
    assert first.last_failover == {"term": 2, "leader": "n1", "previous": None, "timestamp": 1700000000500}  # the set's first
    node = _node(tmp_path)
    node.takeover.saw_leader(3, "n2")
    node.takeover.saw_leader(9, "n1", previous="n2")
    assert node.last_failover == {"term": 9, "leader": "n1", "previous": "n2", "timestamp": 1700000000500}
