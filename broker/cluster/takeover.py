"""How a follower learns fast that the leader is gone, and how long its own takeover took (issue 32, F2-F4).

- A watch of the leader key wakes the node's tick at once: on a deletion (the
  lease ended or was revoked) a follower campaigns, on a new value it follows the
  new term. The tick's period is only the fallback for the watch's gaps.
- A leader whose address *refuses* connections has no process left: a follower
  removes its key (guarded by its term) after ``decisions.DEAD_LEADER_REFUSED_FOR``
  instead of waiting for the lease, with ``ack=quorum`` only (``may_end_dead_term``).
- The node that takes over times each phase (failover_phases.py) into the view's
  ``last_failover``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from .decisions import may_end_dead_term
from .etcd import ClusterAddress, EtcdClient, EtcdUnavailable, WatchKind, unchanged
from .failover_phases import FailoverPhases
from .peers import PeerClient, PeerError, PeerUnreachable

log = logging.getLogger(__name__)


class Takeover:
    """The watch of the leader key, the end of a dead leader's term, and the record of the last failover this node saw.

    ``wake`` is the node's tick's: set, the tick runs at once.
    """

    def __init__(self, node_id: str, ack: str, address: ClusterAddress, etcd: EtcdClient, http: PeerClient,
                 wake: asyncio.Event, clock: Callable[[], float], wall_clock: Callable[[], float]) -> None:
        self._node_id = node_id
        self._ack = ack
        self._address = address
        self._etcd = etcd
        self._http = http
        self._wake = wake
        self._clock = clock
        self._wall_clock = wall_clock
        self.last_failover: dict[str, Any] | None = None  # the view's: the last change of leader this node saw
        self._last_leader: str | None = None  # whom this node last led or followed
        self.leader_changes = 0  # times the leader this node saw changed since start (halfmq_cluster_leader_changes_total)
        self._leader_answered_at: float | None = None  # the followed leader's last answer to this node
        self._gone_seen_at: float | None = None  # when this node saw the leader key gone (None: a leader is known)
        self._failover: FailoverPhases | None = None  # this node's own election, timed until its first acknowledged write

    async def watch(self) -> None:
        """Wake the tick when the leader key changes; the watch reconnects by itself."""
        async for event in self._etcd.watch(self._address.key("leader")):
            if event.kind is WatchKind.DELETE:
                self.leader_gone()
            self._wake.set()

    async def end_dead_term(self, url: str, term: int, every: float = 0.05) -> None:
        """If the leader's address refuses connections for a moment, remove its key, so the set elects now rather than
        when the lease runs out. Returns as soon as it answers or fails otherwise (stopped, cut off), or with ack=leader."""
        if self._ack != "quorum":
            return
        since: float | None = None
        while True:
            try:
                await self._http.get(f"{url}/healthz")
                return  # it answers: not dead (the next tick follows again)
            except PeerUnreachable as exc:
                if not exc.refused:  # timed out or unroutable: not proof that the process is gone
                    return
            except PeerError:
                return
            now = self._clock()
            since = now if since is None else since
            if may_end_dead_term(since, now, self._ack):
                break
            await asyncio.sleep(every)
        key = self._address.key("leader")
        try:
            ended = await self._etcd.delete_if(key, [unchanged(key, term)])
        except EtcdUnavailable:
            return
        if ended:
            log.warning("node %s: the leader at %s refuses connections (its process is gone): removed its key (term %d) "
                        "instead of waiting for its lease", self._node_id, url, term)
            self.leader_gone()
            self._wake.set()

    def leader_answered(self) -> None:
        """The leader this node follows answered (any answer but a 5xx): the failover's clock starts at its last one."""
        self._leader_answered_at = self._clock()

    def leader_gone(self) -> None:
        """This node saw the leader key gone (the first sight counts, until a leader is known again)."""
        if self._gone_seen_at is None:
            self._gone_seen_at = self._clock()

    def leader_known(self, term: int, leader_id: str) -> None:
        """The leader key names a member again."""
        self._gone_seen_at = None
        self.saw_leader(term, leader_id)

    def saw_leader(self, term: int, leader_id: str, previous: str | None = None) -> None:
        """A new leader is a failover when another node led before it (as far as this node saw); its own election always is."""
        before = previous or self._last_leader
        self._last_leader = leader_id
        if leader_id != before:
            self.leader_changes += 1
        if leader_id != before and (before is not None or leader_id == self._node_id):
            self.last_failover = {"term": term, "leader": leader_id, "previous": before, "timestamp": int(self._wall_clock() * 1000)}

    def elected(self, term: int) -> None:
        """This node just won the election of ``term``: time the rest of its takeover if it is a failover."""
        elected = self._clock()
        if self.last_failover is None or self.last_failover["term"] != term:
            self._failover = None
            return
        self._failover = FailoverPhases(self._leader_answered_at or self._gone_seen_at or elected)
        self._failover.mark("lease", self._gone_seen_at or elected)
        self._failover.mark("election", elected)

    def took_over(self) -> None:
        """This node serves as the new leader: the reopen phase ends, and the old leader's marks are spent."""
        self.phase("reopen")
        self._leader_answered_at = self._gone_seen_at = None

    def phase(self, phase: str) -> None:
        """One more phase of this node's own election ended: the view's ``last_failover`` shows the phases so far."""
        if self._failover is None:
            return
        self._failover.mark(phase, self._clock())
        record = self._failover.record()
        if self.last_failover is not None:
            self.last_failover.update(record)
        if self._failover.done:
            log.warning("node %s: took over in %.3f s (%s)", self._node_id, record["seconds"], record["phases"])
            self._failover = None

    def stepped_down(self) -> None:
        """A takeover still timed ends unrecorded: this node no longer leads."""
        self._failover = None
