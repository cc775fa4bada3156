"""A leader's quorum wait: its own fsync runs beside the replication and is one vote (issue 32, R2).

The leader's fsync is a fake that completes only when the test says so; the
followers' reports go straight to the tracker, as the replication routes give them.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace

from halfmq.broker.cluster.decisions import Role
from halfmq.broker.cluster.node import ClusterNode
from halfmq.broker.config import BrokerSettings
from tests.support.loop_steps import run_ready

MEMBERS = ["n1=http://127.0.0.1:8081", "n2=http://127.0.0.1:8082", "n3=http://127.0.0.1:8083"]


def _leader(tmp_path: Path) -> ClusterNode:
    settings = BrokerSettings(data_dir=tmp_path, grpc_port=0, cluster="etcd://127.0.0.1:2379/t", node_id="n1",
                              cluster_members=MEMBERS, ack="quorum")
    store = SimpleNamespace(commit_log=SimpleNamespace(end_offset=500), acknowledged_end=0, flushed_offset=0,
                            visible=SimpleNamespace(bound=None))
    node = ClusterNode(settings, SimpleNamespace(store=store), clock=lambda: 100.0)  # type: ignore[arg-type]
    node.standing.role, node.lease.id, node.standing.term, node.lease.renewal_sent_at = Role.LEADER, 77, 12, 100.0
    node.tracker.reset(frozenset({"n1", "n2", "n3"}))
    return node


class SlowFsync:
    """The leader's local fsync: each call waits until ``complete``."""

    def __init__(self) -> None:
        self.done = asyncio.Event()
        self.asked: list[int] = []

    async def __call__(self, end: int) -> None:
        self.asked.append(end)
        await self.done.wait()


async def test_a_quorum_write_is_acknowledged_once_both_followers_report_it_durable_even_while_the_leaders_own_fsync_is_still_running(
        tmp_path: Path) -> None:
    node, fsync = _leader(tmp_path), SlowFsync()
    waiting = asyncio.ensure_future(node.durable(fsync)(500))
    await run_ready()
    assert fsync.asked == [500]  # the fsync was asked at once, beside the replication
    node.tracker.report("n2", 500, leader_end=500)
    node.tracker.report("n3", 500, leader_end=500)
    await asyncio.wait_for(waiting, 5)
    assert not fsync.done.is_set()
    fsync.done.set()


async def test_the_leaders_fsync_counts_as_a_vote_when_it_completes(tmp_path: Path) -> None:
    node, fsync = _leader(tmp_path), SlowFsync()
    waiting = asyncio.ensure_future(node.durable(fsync)(500))
    node.tracker.report("n2", 500, leader_end=500)  # one follower: with the leader's fsync still running, no majority
    await run_ready()
    assert not waiting.done()
    fsync.done.set()
    await asyncio.wait_for(waiting, 5)
    assert node.tracker.leader_durable == 500
