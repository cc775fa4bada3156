"""A bounded nemesis for the queue checker: a seeded sequence of faults on a broker set, each one healed.

Kinds: kill -9 of the leader or of a follower (restarted), SIGSTOP of the leader (SIGCONT once another node leads,
or after a few seconds), kill -9 of etcd (restarted after 1 to 6 s, sometimes past the lease), a follower's full
disk (its data dir's tmpfs squeezed full, then given room again) and, when the run has a network of its own
(``tests/support/netns.py``), a partition (the leader cut from the other nodes, a node cut from everything, or the
leader cut from etcd). Sometimes a second fault starts before the first is healed (``fault_schedule.OVERLAP``); both are healed
before the next step, and ``settle`` waits until every node runs, one leads and all are in sync, so a majority of
nodes plus etcd is always available again before the next step.
"""

from __future__ import annotations

import collections
import os
import random
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from .broker_set import BrokerSet
from .fault_schedule import DISK_FULL, KILL_ETCD, KILL_FOLLOWER, KILL_LEADER, KINDS, PARTITION, STOP_LEADER, schedule
from .netns import Partitions

ETCD = "etcd"


@dataclass
class Active:
    """A fault in place: what it did, on whom, and how to heal it (the heal says how it went)."""

    kind: str
    target: str
    note: str
    heal: Callable[[], str]


@dataclass
class Nemesis:
    brokers: BrokerSet
    rng: random.Random
    partitions: Partitions | None = None
    counts: collections.Counter[str] = field(default_factory=collections.Counter)
    applied: list[str] = field(default_factory=list)
    overlapped: int = 0  # steps with a second fault before the first was healed

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(k for k in KINDS if (k != PARTITION or self.partitions) and (k != DISK_FULL or self.brokers.disks))

    def schedule(self, faults: int) -> list[list[str]]:
        return schedule(self.kinds, faults, self.rng)

    def step(self, kinds: list[str]) -> None:
        """Start each kind (the second while the first holds), wait, heal them in a seeded order, then settle."""
        active: list[Active] = []
        self.overlapped += len(kinds) > 1
        try:
            for kind in kinds:
                fault = self.start(kind, taken={a.target for a in active})
                active.append(fault)
                self.counts[fault.kind] += 1  # what was applied (a kind that needs a leader falls back when none leads)
                time.sleep(self.rng.uniform(0.5, 4.0))
        finally:
            notes = [f"{a.note}: {a.heal()}" for a in self.rng.sample(active, len(active))]
            settled = self.settle()
            self.applied.append(" + ".join(notes) + (f" ({settled})" if settled else ""))

    def roles(self, timeout: float) -> tuple[str | None, list[str]]:
        """The leader (None if none shows within ``timeout``) and the other nodes."""
        try:
            leader: str | None = self.brokers.leader(timeout=timeout)
        except AssertionError:
            leader = None
        return leader, sorted(n for n in self.brokers.nodes if n != leader)

    def start(self, kind: str, taken: set[str]) -> Active:
        leader, others = self.roles(timeout=30 if not taken else 3)
        followers = [n for n in others if n not in taken and self.brokers.nodes[n].alive]
        if leader is None or leader in taken:  # a second fault while nobody leads: a node-side fault on a free node
            kind = {KILL_LEADER: KILL_FOLLOWER, STOP_LEADER: KILL_FOLLOWER}.get(kind, kind)
        if kind in (KILL_FOLLOWER, DISK_FULL) and not followers or kind == KILL_ETCD and ETCD in taken:
            kind = KILL_ETCD if ETCD not in taken else KILL_FOLLOWER
        if kind == KILL_LEADER:
            return self._kill(kind, leader)  # type: ignore[arg-type]
        if kind == KILL_FOLLOWER:
            return self._kill(kind, self.rng.choice(followers))
        if kind == STOP_LEADER:
            return self._stop(leader)  # type: ignore[arg-type]
        if kind == KILL_ETCD:
            return self._kill_etcd()
        if kind == DISK_FULL:
            return self._disk_full(self.rng.choice(followers))
        return self._partition(leader, others)

    def _kill(self, kind: str, node_id: str) -> Active:
        self.brokers.nodes[node_id].kill9()

        def heal() -> str:
            self.brokers.nodes[node_id].start(timeout=60)
            return "restarted"
        return Active(kind, node_id, f"{kind} {node_id}", heal)

    def _stop(self, node_id: str) -> Active:
        pid = self.brokers.nodes[node_id].pid
        assert pid is not None
        os.kill(pid, signal.SIGSTOP)
        hold = self.rng.uniform(2.0, 8.0)

        def heal() -> str:
            try:
                self.brokers.leader(timeout=hold, not_=node_id)
                outcome = "another node took over"
            except AssertionError:
                outcome = f"nobody else led within {hold:.1f}s"
            finally:
                os.kill(pid, signal.SIGCONT)
            return f"SIGCONT, {outcome}"
        return Active(STOP_LEADER, node_id, f"{STOP_LEADER} {node_id}", heal)

    def _kill_etcd(self) -> Active:
        self.brokers.etcd.kill9()
        down = self.rng.uniform(1.0, 6.0)
        killed = time.monotonic()

        def heal() -> str:
            time.sleep(max(0.0, down - (time.monotonic() - killed)))
            self.brokers.etcd.start(timeout=30)
            return f"restarted after {time.monotonic() - killed:.1f}s"
        return Active(KILL_ETCD, ETCD, KILL_ETCD, heal)

    def _disk_full(self, node_id: str) -> Active:
        disk = self.brokers.disks[node_id]
        disk.squeeze()
        hold = self.rng.uniform(2.0, 8.0)
        filled = time.monotonic()

        def heal() -> str:
            time.sleep(max(0.0, hold - (time.monotonic() - filled)))
            disk.release()
            node = self.brokers.nodes[node_id]
            if node.alive:
                return "room again"
            code = node.proc.returncode if node.proc else None
            node.start(timeout=60)
            return f"room again; it had exited with {code}, restarted"
        return Active(DISK_FULL, node_id, f"{DISK_FULL} {node_id}", heal)

    def _partition(self, leader: str | None, others: list[str]) -> Active:
        assert self.partitions is not None
        shape = self.rng.choice(("leader from the other nodes", "a node from everything", "leader from etcd"))
        if leader is None:
            shape = "a node from everything"
        if shape == "leader from the other nodes":
            victim, cut = leader, others
        elif shape == "leader from etcd":
            victim, cut = leader, [ETCD]
        else:
            victim = self.rng.choice(sorted(self.brokers.nodes))
            cut = [n for n in self.brokers.nodes if n != victim] + [ETCD]
        assert victim is not None
        rules = [self.partitions.cut(victim, other) for other in cut]
        hold = self.rng.uniform(1.0, 8.0)
        started = time.monotonic()

        def heal() -> str:
            time.sleep(max(0.0, hold - (time.monotonic() - started)))
            for rule in rules:
                self.partitions.heal(rule)  # type: ignore[union-attr]
            return f"healed after {time.monotonic() - started:.1f}s"
        return Active(PARTITION, victim, f"{PARTITION}: {shape} ({victim} | {', '.join(cut)})", heal)

    def settle(self, timeout: float = 120.0) -> str:
        """Every node running (one that exited by itself is restarted, and said so), one leader, all in sync."""
        notes = []
        for node_id, node in self.brokers.nodes.items():
            if not node.alive:
                notes.append(f"{node_id} had exited with {node.proc.returncode if node.proc else None}, restarted")
                node.start(timeout=60)
        if not self.brokers.etcd.alive:
            notes.append("etcd had exited, restarted")
            self.brokers.etcd.start(timeout=30)
        all_in_sync(self.brokers, timeout)
        return "; ".join(notes)


def all_in_sync(brokers: BrokerSet, timeout: float = 60.0) -> str:
    """The leader, once every node is in its in-sync set."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        leader = brokers.leader(timeout=max(1.0, deadline - time.monotonic()))
        view = brokers.view(leader)
        if view and len(view["in_sync"]) == len(brokers.nodes):
            return leader
        time.sleep(0.2)
    raise AssertionError("the set did not get all nodes in sync again")
