"""A follower keeps its leader's state snapshot, so its promotion replays what changed since, not the set's history.

A promotion rebuilds the new leader's services from its own data dir: its state snapshot plus the state records after
it (decision 051). Only a leader writes snapshots (a follower's services do not follow the records it appends), so a
follower that never led would replay ``HALFMQ_TXN_STATE`` from its first entry: an outage that grows with the set's age
(issue 44: ~18 s after 100k transactions). The snapshot file is valid on any node whose log holds the same bytes (what
``state_snapshot.load`` checks), so a follower takes the leader's newest one about once per ``state_snapshot_interval``,
the pace at which the leader writes them, and installs it once its log holds what it counts. A promotion then reads at
most about two intervals of state records, as a leader's own restart does.

The transfer runs beside the replication stream, not in it: a snapshot of a few MiB must not stall replication (quorum acks).
Each round first asks for an empty part past any file's end (``PROBE_OFFSET``): its headers name the leader's newest
snapshot, so an unchanged one costs a request, not a transfer.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path

from halfmq.broker.store import state_snapshot
from halfmq.broker.store.message_store import MessageStore

from .catch_up import SNAPSHOT_ENTRIES_HEADER, SnapshotTaker
from .peers import PeerClient, PeerError

log = logging.getLogger(__name__)

PROBE_OFFSET = 1 << 62  # past the end of any snapshot file: an empty part whose headers name the newest snapshot


def take_leaders_snapshot(own_entries: int | None, leader_entries: int | None) -> bool:
    """Whether the leader's newest snapshot is worth taking: it counts more state entries than this node's own (a node
    that led keeps its newer one; none at the leader yet: nothing to take)."""
    return leader_entries is not None and leader_entries > (own_entries or 0)


def own_entries(root: Path) -> int | None:
    """How many state entries this node's newest snapshot file counts (its header only); None without a readable one."""
    try:
        return state_snapshot.header_of(root / state_snapshot.FILE).entries
    except (OSError, state_snapshot.Unusable):
        return None


class PromotionSnapshots:
    """Takes the leader's newer state snapshot about once an ``interval``, for the life of one ``follow``."""

    def __init__(self, node_id: str, http: PeerClient, taker: SnapshotTaker, interval: float,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self._node_id = node_id
        self._http = http
        self._taker = taker
        self._interval = interval
        self._sleep = sleep

    async def run(self, leader_url: str, store: Callable[[], MessageStore]) -> None:
        """Until cancelled: each interval, ask which snapshot the leader has and take it if newer than this node's."""
        while True:
            await self._sleep(self._interval)
            try:
                await self.once(leader_url, store())
            except (PeerError, state_snapshot.Unusable, OSError, ValueError, KeyError) as exc:  # asked again next interval
                log.debug("node %s: leader's state snapshot not taken: %r", self._node_id, exc)

    async def once(self, leader_url: str, store: MessageStore) -> bool:
        """One round: whether a newer snapshot of the leader's is now this node's."""
        answer = await self._http.get(f"{leader_url}/v1/replication/snapshot",
                                      params={"node_id": self._node_id, "offset": PROBE_OFFSET})
        if answer.status_code == 404:
            return False  # the leader has written none yet
        answer.raise_for_status()
        root = Path(store.config.data_dir)
        if not take_leaders_snapshot(await asyncio.to_thread(own_entries, root), int(answer.headers[SNAPSHOT_ENTRIES_HEADER])):
            return False
        return await self._taker.take_and_install(leader_url, store)
