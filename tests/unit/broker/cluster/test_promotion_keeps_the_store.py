"""A follower that becomes leader keeps its store open: no recovery, only the services above it built again (issue 32).

The old leader is a real runtime in its own data dir; the follower appends its log
bytes as replication does, then is promoted through the node's own ``_promote``
against a fake etcd.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from halfmq.broker.cluster.decisions import Role
from halfmq.broker.cluster.etcd import KeyValue, Lease
from halfmq.broker.cluster.node import ClusterNode
from halfmq.broker.config import BrokerSettings
from halfmq.broker.grpc_front.front import LeaderFront
from halfmq.broker.runtime import BrokerRuntime, SetRoles
from halfmq.broker.store.message_store import PutItem
from halfmq.broker.store.recovery import Recovery
from halfmq.errors import NotLeader
from tests.support.grants import subscribed

MEMBERS = ["n1=http://127.0.0.1:8081", "n2=http://127.0.0.1:8082", "n3=http://127.0.0.1:8083"]


class FakeEtcd:
    def __init__(self) -> None:
        self.revision = 10
        self.keys: dict[str, KeyValue] = {}

    async def get(self, key: str) -> KeyValue | None:
        return self.keys.get(key)

    async def put_if(self, key: str, value: str, lease: int, compares: list[dict[str, Any]]) -> int | None:
        self.revision += 1
        self.keys[key] = KeyValue(key, value.encode(), self.revision, self.revision, lease)
        return self.revision

    async def get_prefix(self, prefix: str) -> list[KeyValue]:
        return []

    async def aclose(self) -> None:
        pass


def _settings(data_dir: Path, node_id: str) -> BrokerSettings:
    return BrokerSettings(data_dir=data_dir, grpc_port=0, cluster="etcd://127.0.0.1:2379/t", node_id=node_id,
                          cluster_members=MEMBERS, ack="leader")


def _node(settings: BrokerSettings, state: SimpleNamespace) -> ClusterNode:
    """The node over ``state.runtime``, with the services the app's lifespan gives it, against a fake etcd."""
    roles = SetRoles(settings, state, LeaderFront(settings.advertise_url, settings.grpc_port))
    return ClusterNode(settings, roles, etcd=FakeEtcd(), renewals=FakeEtcd())  # type: ignore[arg-type]


@pytest.fixture
async def old_leader(tmp_path: Path) -> AsyncIterator[BrokerRuntime]:
    """A leader's runtime that stored 10 messages and acknowledged 4 of them to a consumer."""
    rt = BrokerRuntime.open(_settings(tmp_path / "n1", "n1"))
    rt.store.create_topic("T", 1)
    rt.store.put([PutItem("T", 0, str(i).encode()) for i in range(10)])
    rt.store.visible.advance(rt.store.commit_log.end_offset)  # its high watermark: a set's node shows nothing past it
    got = await rt.delivery.receive("g", "T", 4, invisible=30, wait=0)
    await rt.usecases.settling.ack(subscribed(rt, "g", "T"), [d.receipt_handle for d in got])
    try:
        yield rt
    finally:
        rt.store.close()


async def test_a_follower_that_becomes_leader_keeps_its_store_open_and_serves_every_message_the_old_leader_acknowledged(
        tmp_path: Path, old_leader: BrokerRuntime, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = _settings(tmp_path / "n2", "n2")
    state = SimpleNamespace(runtime=BrokerRuntime.open(settings))  # a follower's runtime, as the app's lifespan opens it
    node = _node(settings, state)
    store = state.runtime.store
    end = old_leader.store.commit_log.end_offset
    assert store.append_replicated(old_leader.store.commit_log.read(0, end), 0) == end
    store.wait_flushed(end).result(timeout=30)  # type: ignore[union-attr]
    node.following.replication.leader_high_watermark = end  # the old leader's mark, as its last fetch answer said
    recoveries: list[Recovery] = []
    recover = Recovery.run
    monkeypatch.setattr(Recovery, "run", lambda self: recoveries.append(self) or recover(self))
    try:
        await node._promote(node.term + 1, Lease(77, 2), node._clock(), frozenset({"n2"}), "n1")  # its grant sent just now
        assert node.role is Role.LEADER
        assert state.runtime.store is store
        assert recoveries == []
        assert store._checkpoints.hooks == [state.runtime.timers.checkpoint]  # the follower's timer index writes no more state
        got = await state.runtime.delivery.receive("g", "T", 10, invisible=30, wait=0)
        assert sorted(int(d.message.body) for d in got) == list(range(4, 10))  # every message once, but the 4 acked before
    finally:
        await state.runtime.stop()


async def test_a_leader_past_its_lease_fence_hands_out_no_delivery(tmp_path: Path, old_leader: BrokerRuntime) -> None:
    """A pause (SIGSTOP, a stall) longer than the fence: a long poll that wakes in it answers NOT_LEADER, not from the
    state this node had, which another leader may have settled meanwhile."""
    settings = _settings(tmp_path / "n2", "n2")
    state = SimpleNamespace(runtime=BrokerRuntime.open(settings))
    node = _node(settings, state)
    end = old_leader.store.commit_log.end_offset
    state.runtime.store.append_replicated(old_leader.store.commit_log.read(0, end), 0)
    state.runtime.store.wait_flushed(end).result(timeout=30)
    node.following.replication.leader_high_watermark = end
    try:
        await node._promote(node.term + 1, Lease(77, 2), node._clock(), frozenset({"n2"}), "n1")
        node.lease.renewal_sent_at = node._clock() - 10  # its last renewal was sent before the pause
        with pytest.raises(NotLeader):
            await state.runtime.delivery.receive("g", "T", 10, invisible=30, wait=0)
        node.lease.renewal_sent_at = node._clock()
        assert len(await state.runtime.delivery.receive("g", "T", 10, invisible=30, wait=0)) == 6
    finally:
        await state.runtime.stop()
