"""A node's lease and its watch of the leader key, against a fake etcd and a fake clock (issue 32, F1-F3).

No test here waits for a duration: the tick's period is set to an hour where it must
not matter, so only a watch event can explain what happens.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from halfmq.broker.cluster.decisions import Role
from halfmq.broker.cluster.etcd import EtcdUnavailable, KeyValue, Lease, WatchEvent, WatchKind
from halfmq.broker.cluster.node import ClusterNode
from halfmq.broker.cluster.role_services import Leadership
from halfmq.broker.config import BrokerSettings
from tests.support.fake_clock import FakeClock

MEMBERS = ["n1=http://127.0.0.1:8081", "n2=http://127.0.0.1:8082", "n3=http://127.0.0.1:8083"]
HOUR = 3600.0  # a tick period that never comes during a test


class FakeEtcd:
    """The leader key and the in-sync set in memory; a watch that yields what ``change`` is told."""

    def __init__(self) -> None:
        self.keys: dict[str, KeyValue] = {}
        self.revision = 10
        self.events: asyncio.Queue[WatchEvent] = asyncio.Queue()
        self.campaigns: list[str] = []
        self.renewals = 0
        self.renewed: asyncio.Queue[int] = asyncio.Queue()
        self.renewals_fail = False
        self.hang = asyncio.Event()  # get() waits for it when ``hanging``
        self.hanging = False
        self.ended: list[tuple[str, int]] = []  # delete_if calls: (key, the term it had to still be)

    def change(self, key: str, value: dict[str, str] | None, lease: int = 5) -> None:
        self.revision += 1
        if value is None:
            self.keys.pop(key, None)
            self.events.put_nowait(WatchEvent(WatchKind.DELETE, self.revision, KeyValue(key, b"", 0, self.revision, 0)))
        else:
            kv = KeyValue(key, json.dumps(value).encode(), self.revision, self.revision, lease)
            self.keys[key] = kv
            self.events.put_nowait(WatchEvent(WatchKind.PUT, self.revision, kv))

    async def get(self, key: str) -> KeyValue | None:
        if self.hanging:
            await self.hang.wait()
        return self.keys.get(key)

    async def grant(self, ttl: int) -> Lease:
        return Lease(77, max(2, ttl))

    async def put_if(self, key: str, value: str, lease: int, compares: list[dict[str, Any]]) -> int | None:
        self.campaigns.append(key)
        self.change(key, json.loads(value), lease)
        return self.revision

    async def revoke(self, lease: int) -> None:
        pass

    async def aclose(self) -> None:
        pass

    async def delete_if(self, key: str, compares: list[dict[str, Any]]) -> bool:
        self.ended.append((key, int(compares[0]["mod_revision"])))
        return True

    async def keepalive(self, lease: int) -> int:
        if self.renewals_fail:
            raise EtcdUnavailable("etcd did not answer")
        self.renewals += 1
        self.renewed.put_nowait(lease)
        return 2

    async def watch(self, key: str, start_revision: int = 0) -> AsyncIterator[WatchEvent]:
        while True:
            yield await self.events.get()


def _node(tmp_path: Path, etcd: FakeEtcd, clock: FakeClock, lease_ttl: int = 2, node_id: str = "n1", ack: str = "leader",
          members: list[str] = MEMBERS) -> ClusterNode:
    settings = BrokerSettings(data_dir=tmp_path, grpc_port=0, cluster="etcd://127.0.0.1:2379/t", node_id=node_id,
                              cluster_members=members, lease_ttl=lease_ttl, ack=ack)
    store = SimpleNamespace(commit_log=SimpleNamespace(end_offset=0), acknowledged_end=0, flushed_offset=0, visible=SimpleNamespace(bound=None))
    return ClusterNode(settings, SimpleNamespace(store=store), clock=clock, wall_clock=lambda: 1700000000.0,  # type: ignore[arg-type]
                       etcd=etcd, renewals=etcd)  # type: ignore[arg-type]


class Recorder:
    """Stands in for the node's I/O that a test does not look at: following, the services of a role, publishing."""

    def __init__(self, node: ClusterNode, clock: FakeClock, reopen_seconds: float = 0.0) -> None:
        self.followed: list[tuple[str, int]] = []
        self.reopened: list[bool] = []
        self.changed = asyncio.Event()

        async def follow(url: str, term: int) -> None:
            self.followed.append((url, term))
            self.changed.set()

        async def reopen(start: bool) -> None:
            clock.now += reopen_seconds
            self.reopened.append(start)
            self.changed.set()

        async def lead(leadership: Leadership) -> None:
            await reopen(True)

        async def follow_as_follower() -> None:
            await reopen(False)

        async def nothing() -> None:
            pass

        node.following.follow = follow  # type: ignore[method-assign]
        node.services.lead = lead  # type: ignore[method-assign]
        node.services.follow = follow_as_follower  # type: ignore[method-assign]
        node.leading.publish_in_sync = nothing  # type: ignore[method-assign, assignment]
        node.following.stop = nothing  # type: ignore[method-assign]

    async def until(self, condition: Any) -> None:
        async with asyncio.timeout(30):  # a hang guard, not a measurement
            while not condition():
                self.changed.clear()
                await self.changed.wait()


async def _running(node: ClusterNode, *coroutines: Any) -> list[asyncio.Task]:
    return [asyncio.get_running_loop().create_task(c) for c in coroutines]


async def _stopped(tasks: list[asyncio.Task], node: ClusterNode) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await node._http.aclose()  # (a campaign asked the other members' positions over it)


async def test_a_follower_campaigns_on_the_leader_keys_deletion_event_without_waiting_for_its_tick(tmp_path: Path) -> None:
    etcd, clock = FakeEtcd(), FakeClock()
    etcd.change("/t/leader", {"node_id": "n2", "url": "http://127.0.0.1:8082"})
    etcd.events.get_nowait()  # there before the node started: read by its first tick, not watched
    node = _node(tmp_path, etcd, clock)
    calls = Recorder(node, clock)
    tasks = await _running(node, node._run(every=HOUR), node.takeover.watch())
    try:
        await calls.until(lambda: calls.followed)
        assert calls.followed == [("http://127.0.0.1:8082", 11)] and not etcd.campaigns
        etcd.change("/t/leader", None)  # n2's lease ended
        await calls.until(lambda: calls.reopened)
        assert etcd.campaigns == ["/t/leader"] and calls.reopened == [True]
        assert node.role is Role.LEADER and node.term == etcd.revision
    finally:
        await _stopped(tasks, node)


async def test_a_follower_follows_a_new_leader_key_on_its_put_event_without_waiting_for_its_tick(tmp_path: Path) -> None:
    etcd, clock = FakeEtcd(), FakeClock()
    etcd.change("/t/leader", {"node_id": "n2", "url": "http://127.0.0.1:8082"})
    etcd.events.get_nowait()
    node = _node(tmp_path, etcd, clock, node_id="n1")
    calls = Recorder(node, clock)
    node.tracker.in_sync = frozenset({"n2", "n3"})  # n1 is not in sync: it does not stand, it waits for the next leader
    etcd.keys["/t/in-sync"] = KeyValue("/t/in-sync", b'["n2", "n3"]', 5, 5, 0)
    tasks = await _running(node, node._run(every=HOUR), node.takeover.watch())
    try:
        await calls.until(lambda: calls.followed)
        etcd.change("/t/leader", None)
        etcd.change("/t/leader", {"node_id": "n3", "url": "http://127.0.0.1:8083"})
        await calls.until(lambda: len(calls.followed) == 2)
        assert calls.followed[-1] == ("http://127.0.0.1:8083", etcd.revision) and not etcd.campaigns
    finally:
        await _stopped(tasks, node)


def _leading(node: ClusterNode, clock: FakeClock) -> None:
    node.standing.role, node.lease.id, node.standing.term, node.lease.renewal_sent_at = Role.LEADER, 77, 12, clock.now


async def test_a_leader_renews_its_lease_on_its_own_task_while_the_ticks_etcd_call_hangs(tmp_path: Path) -> None:
    etcd, clock = FakeEtcd(), FakeClock()
    node = _node(tmp_path, etcd, clock)
    _leading(node, clock)
    etcd.hanging = True  # the tick's get(leader) never answers
    tasks = await _running(node, node._run(every=0.01), node.lease.renew_loop())
    try:
        async with asyncio.timeout(30):  # a hang guard, not a measurement
            for _ in range(4):
                await etcd.renewed.get()
        assert node.role is Role.LEADER and node.writable
    finally:
        await _stopped(tasks, node)


async def test_a_leader_whose_etcd_stops_answering_takes_no_write_past_its_fence_and_steps_down_before_its_lease_ends(
        tmp_path: Path) -> None:
    etcd, clock = FakeEtcd(), FakeClock(100.0)
    node = _node(tmp_path, etcd, clock)
    calls = Recorder(node, clock)
    _leading(node, clock)
    etcd.renewals_fail = True
    clock.now = 101.4
    await node.lease.renew(77, clock.now)  # a failed renewal before the fence: it keeps leading and tries again
    assert node.role is Role.LEADER and node.writable
    clock.now = 101.5  # sent + TTL - margin (2 - 0.5)
    assert not node.writable
    await node.lease.renew(77, clock.now)  # the first failed renewal past the fence
    assert node.role is Role.FOLLOWER and calls.reopened == [False]
    assert clock.now < 100.0 + 2  # half a second before etcd could end the lease


async def test_a_lease_etcd_granted_longer_than_asked_is_the_one_the_fence_counts(tmp_path: Path) -> None:
    etcd, clock = FakeEtcd(), FakeClock()
    node = _node(tmp_path, etcd, clock, lease_ttl=1)
    Recorder(node, clock)
    assert node.lease.fence.ttl == 1
    await node._promote(12, Lease(77, 2), clock.now, frozenset({"n1", "n2", "n3"}), None)
    assert node.lease.fence.ttl == 2 and node.lease.fence.renew_every == 0.25


async def test_a_failovers_phases_in_the_cluster_view_add_up_to_its_total(tmp_path: Path) -> None:
    etcd, clock = FakeEtcd(), FakeClock(100.0)
    node = _node(tmp_path, etcd, clock)
    Recorder(node, clock, reopen_seconds=0.12)
    node.takeover.saw_leader(9, "n2")  # it followed n2
    node.takeover.leader_answered()  # n2's last answer, at 100.0
    clock.now = 101.9
    node.takeover.leader_gone()  # its key's deletion event
    clock.now = 101.93
    await node._promote(12, Lease(77, 2), clock.now, frozenset({"n1", "n2", "n3"}), "n2")
    clock.now = 102.2

    async def local(end: int) -> None:
        pass

    await node.durable(local)(10)  # the first acknowledged write of the new term
    record = node.last_failover
    assert record is not None and (record["leader"], record["previous"]) == ("n1", "n2")
    assert record["phases"] == {"lease": 1.9, "election": 0.03, "reopen": 0.12, "first_ack": 0.15}
    assert record["seconds"] == round(sum(record["phases"].values()), 3) == 2.2


class TickingClock(FakeClock):
    """Each reading is 50 ms after the last."""

    def __call__(self) -> float:
        self.now += 0.05
        return self.now


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again: a connect there is refused


async def test_a_follower_removes_the_key_of_a_leader_whose_address_refuses_connections_with_ack_quorum(tmp_path: Path) -> None:
    dead = f"http://127.0.0.1:{_closed_port()}"
    etcd, clock = FakeEtcd(), TickingClock()
    node = _node(tmp_path, etcd, clock, ack="quorum", members=["n1=http://127.0.0.1:8081", f"n2={dead}", "n3=http://127.0.0.1:8083"])
    await node.takeover.end_dead_term(dead, 41, every=0.0)
    assert etcd.ended == [("/t/leader", 41)]  # guarded by its term: a newer leader's key is never removed
    assert node._wake.is_set()  # and the node campaigns at once
    await node.stop()


async def test_with_ack_leader_a_refusing_leader_keeps_its_term_until_its_lease_ends(tmp_path: Path) -> None:
    dead = f"http://127.0.0.1:{_closed_port()}"
    etcd, clock = FakeEtcd(), TickingClock()
    node = _node(tmp_path, etcd, clock, ack="leader", members=["n1=http://127.0.0.1:8081", f"n2={dead}", "n3=http://127.0.0.1:8083"])
    await node.takeover.end_dead_term(dead, 41, every=0.0)
    assert etcd.ended == []
    await node.stop()


async def test_a_new_leader_renews_its_lease_while_its_runtime_reopens(tmp_path: Path) -> None:
    etcd, clock = FakeEtcd(), FakeClock()
    node = _node(tmp_path, etcd, clock)
    Recorder(node, clock)

    async def slow_reopen(leadership: Leadership) -> None:  # a long recovery: longer than the lease unless it is renewed meanwhile
        async with asyncio.timeout(30):  # a hang guard, not a measurement
            for _ in range(2):
                await etcd.renewed.get()

    node.services.lead = slow_reopen  # type: ignore[method-assign]
    tasks = await _running(node, node.lease.renew_loop())
    try:
        await node._promote(12, Lease(77, 2), clock.now, frozenset({"n1", "n2", "n3"}), None)
        assert node.role is Role.LEADER and node.writable
    finally:
        await _stopped(tasks, node)
