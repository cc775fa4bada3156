"""The leader's view of its followers: how far each has the log on disk, and who waits for them.

Followers report their durable log end on their replication stream: when it opens and
with each ack (in this leadership's terms, never below what they reported). A send with ``ack=quorum`` waits here until a majority of
the cluster, the leader one vote, counted among the in-sync set *as published in
etcd*, has it on disk; the published set has at least a majority, or the send
answers SLAVE_NOT_AVAILABLE at once. While a new set is being published the
count takes only the members of both, so whichever etcd holds, every
acknowledged offset is on a majority of it. The same offsets give the high
watermark, how far consumers may read (``advance``); ``on_change`` is told
whenever a report or a new set may have moved it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from functools import partial

from .decisions import FollowerProgress, acknowledged_offset, high_watermark, in_sync_set, out_of_touch, quorum_possible
from .errors import FlushSlaveTimeout, SlaveNotAvailable


class ReplicaTracker:
    def __init__(self, node_id: str, cluster_size: int, lag_time: float, clock: Callable[[], float] = time.monotonic,
                 on_change: Callable[[], None] = lambda: None) -> None:
        self.node_id = node_id
        self.cluster_size = cluster_size
        self.lag_time = lag_time
        self._clock = clock
        self.progress: dict[str, FollowerProgress] = {}
        self.in_sync: frozenset[str] = frozenset({node_id})  # as published in etcd
        self._counted = self.in_sync  # whose reports acknowledge: the published set, while publishing the members of both
        self.term_start = 0  # this term's first offset: a majority must reach it before anything counts
        self.leader_durable = 0  # the leader's own log on disk, as far as it told
        self.acknowledged_mark = 0  # the furthest offset that may have been acknowledged (by this leader or the last)
        self._end_at_fetch: dict[str, int] = {}  # the leader's log end when each follower's last fetch came
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []
        self.high_watermark = 0
        self._on_change = on_change
        self._generation = 0  # one per term: a vote of the leader's own fsync counts only in the term it was asked in

    def reset(self, in_sync: frozenset[str], lagging: str | None = None, high_watermark: int = 0, term_start: int = 0) -> None:
        """A new term: the published set stays; its followers count as caught up now, at offset 0, until they report.

        ``lagging`` (the previous leader, whose lease expired) counts as behind from the start,
        so it leaves the set at the first publication, once the others have the log (``in_sync_set``).
        ``high_watermark`` is where the term starts showing the log: the last one this node heard of as a follower.
        ``term_start`` is this node's log end when elected: the last leader may have acknowledged all of it.
        """
        now = self._clock()
        self._generation += 1
        self.progress = {n: FollowerProgress(0, float("-inf") if n == lagging else now, heard_at=now) for n in in_sync if n != self.node_id}
        self._end_at_fetch = {}
        self.in_sync = self._counted = in_sync | {self.node_id}
        self.high_watermark = high_watermark
        self.term_start = self.acknowledged_mark = term_start
        self.leader_durable = 0

    def report(self, node: str, durable: int, leader_end: int, fetched: int | None = None) -> None:
        """A fetch from ``fetched`` (its appended end; ``durable`` if not given): ``node``'s log is on disk up to ``durable``.

        It is caught up if it asks from where the leader's log ended when its previous
        fetch came (Kafka's rule, KIP-501): a follower that fetched everything there was
        stays in sync under a steady load it never quite reaches the end of. A slow disk
        stays in sync too; only what is on disk votes.
        """
        fetched = durable if fetched is None else fetched
        now = self._clock()
        before = self.progress.get(node)
        caught_up = fetched >= min(leader_end, self._end_at_fetch.get(node, leader_end))
        self._end_at_fetch[node] = leader_end
        caught_up_at = now if caught_up else (before.caught_up_at if before else float("-inf"))
        self.progress[node] = FollowerProgress(max(durable, before.durable) if before else durable, caught_up_at, fetched, now)
        self._release()
        self._on_change()

    def out_of_touch(self, window: float) -> bool:
        """Too few followers fetched or acked within ``window`` to make a majority with this leader (decisions.out_of_touch)."""
        return out_of_touch(self.node_id, self.progress, self._clock(), window, self.cluster_size)

    def wanted_in_sync(self) -> frozenset[str]:
        return in_sync_set(self.node_id, self.in_sync, self.progress, self._clock(), self.lag_time, self.cluster_size,
                           self.high_watermark, self.leader_durable, max(self.acknowledged_mark, self.high_watermark))

    def publishing(self, in_sync: frozenset[str]) -> frozenset[str]:
        """``in_sync`` is about to be written to etcd (returned): until it is known to be there, acks count members of both."""
        self._counted &= in_sync
        return in_sync

    def published(self, in_sync: frozenset[str]) -> None:
        """etcd holds ``in_sync`` now: acknowledgements count it from here on."""
        self.in_sync = self._counted = in_sync
        self._release()
        self._on_change()

    def acknowledged(self, leader_durable: int) -> int:
        return acknowledged_offset(self.node_id, leader_durable, self._counted, self.progress, self.cluster_size, self.term_start)

    def advance(self, leader_durable: int) -> int:
        """The high watermark, with the leader's own log on disk up to ``leader_durable``."""
        self.leader_durable = max(self.leader_durable, leader_durable)
        self.high_watermark = high_watermark(self.high_watermark, self.node_id, self.leader_durable, self._counted, self.progress,
                                             self.cluster_size, self.term_start)
        self.acknowledged_mark = max(self.acknowledged_mark, self.high_watermark)
        return self.high_watermark

    async def wait(self, end: int, seconds: float, local: asyncio.Future[None] | None = None) -> None:
        """Return once a majority in sync has ``end`` on disk, the leader one vote.

        ``local`` is the leader's own fsync of ``end``, running meanwhile: its vote
        counts when it completes (``leader_flushed``), so two followers that have
        ``end`` on disk acknowledge it while the leader's fsync still runs. That is
        safe: a majority holds it, and only a node holding it can be elected
        (``decisions.may_lead``); etcd's raft acknowledges the same way with its
        storage writes asynchronous. A failed local fsync fails the wait, unless a
        majority has ``end`` already. Without ``local`` the caller has awaited it.
        """
        if local is not None:
            local.add_done_callback(partial(self._leader_vote, self._generation, end))
        if not quorum_possible(self.in_sync, self.cluster_size):
            raise SlaveNotAvailable(f"only {len(self.in_sync)} of {self.cluster_size} nodes are in sync; a quorum needs a majority")
        if local is None:
            self.leader_durable = max(self.leader_durable, end)
        if self._acknowledge() >= end:
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append((end, waiter))
        if local is not None:
            local.add_done_callback(partial(_fail_with, waiter))
        try:
            await asyncio.wait_for(asyncio.shield(waiter), seconds)
        except TimeoutError:
            raise FlushSlaveTimeout(f"a majority of the in-sync replicas did not have offset {end} on disk within {seconds}s") from None
        finally:
            if not waiter.done():
                waiter.cancel()
            self._waiters = [(e, w) for e, w in self._waiters if w is not waiter]

    def leader_flushed(self, end: int) -> None:
        """The leader's own log is on disk up to ``end``: its vote."""
        if end > self.leader_durable:
            self.leader_durable = end
            self._release()
            self._on_change()

    def _leader_vote(self, generation: int, end: int, local: asyncio.Future[None]) -> None:
        if local.cancelled() or local.exception() is not None:  # (retrieved here: a wait that returned earlier never looks)
            return
        if generation == self._generation:  # not a fsync of an earlier term's store
            self.leader_flushed(end)

    def fail_all(self, error: Exception) -> None:
        for _, waiter in self._waiters:
            if not waiter.done():
                waiter.set_exception(error)
        self._waiters = []

    def _acknowledge(self) -> int:
        """How far a majority has the log now; what may be acknowledged only grows."""
        offset = self.acknowledged(self.leader_durable)
        self.acknowledged_mark = max(self.acknowledged_mark, offset)
        return offset

    def _release(self) -> None:
        if not self._waiters:
            return
        acknowledged = self._acknowledge()
        keep = []
        for end, waiter in self._waiters:
            if waiter.done():
                continue
            if acknowledged >= end:
                waiter.set_result(None)
            else:
                keep.append((end, waiter))
        self._waiters = keep

    def lag_seconds(self) -> dict[str, float]:
        """Seconds since each follower last caught up with the leader's log end (inf: not since this term began)."""
        now = self._clock()
        return {n: max(0.0, now - p.caught_up_at) for n, p in sorted(self.progress.items())}

    def view(self, leader_end: int) -> list[dict[str, object]]:
        return [{"node_id": n, "durable_offset": p.durable, "log_end": p.fetched, "lag": max(0, leader_end - p.durable),
                 "in_sync": n in self.in_sync}
                for n, p in sorted(self.progress.items())]


def _fail_with(waiter: asyncio.Future[None], local: asyncio.Future[None]) -> None:
    """The leader's own fsync failed before a majority had the write: so does the wait."""
    if not waiter.done() and not local.cancelled() and (error := local.exception()) is not None:
        waiter.set_exception(error)
