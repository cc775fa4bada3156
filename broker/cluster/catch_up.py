"""A follower and its leader's log start: it deletes what the leader deleted, and catches up when it is behind it.

Only the leader runs retention (runtime/services.py); its log start travels on every run of the
replication stream. A follower moves its own log start there with the same ``LogStart.advance``, so every node
holds the same bytes at the same offsets from it on, and never deletes what the leader still has. It first makes
sure its own state snapshot is one the log from there still serves (a promotion replays from it): when its own needs
the log below the leader's start, it takes the leader's (``take_snapshot``: the file decision 051 writes, part by
part, checked whole) and installs it once its log holds what the snapshot counts.

A follower whose log ends below the leader's log start is sent a ``behind`` frame and the stream
closes (``BehindLeader`` here). It takes the leader's snapshot, has its data dir begin empty at the leader's log start
with the snapshot and the term history in one step a crash cannot split (``store.log_start.begin_at``: built beside
the old, then renamed; a restart completes or rolls it back), the node's services reopen the store over it, and it
follows as usual from there
(Raft's InstallSnapshot, Kafka's log start offset). Memory stays bounded: the snapshot comes in parts of
``SNAPSHOT_PART_BYTES`` straight to a file, and the log in the stream's bounded runs.
docs/decisions/052-retention-by-whole-segments-and-pins.md says why.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from halfmq.broker.store import state_snapshot
from halfmq.broker.store.message_store import MessageStore

from .peers import PeerClient, PeerError

log = logging.getLogger(__name__)

LOG_START_HEADER = "x-halfmq-log-start"  # the leader's log start, on every snapshot part (a stream's run carries it in its header)
SNAPSHOT_SIZE_HEADER = "x-halfmq-snapshot-size"  # the whole file's size, on each part
SNAPSHOT_ENTRIES_HEADER = "x-halfmq-snapshot-entries"  # which snapshot a part is of (a new one may replace it meanwhile)
HISTORY_HEADER = "x-halfmq-term-history"  # the leader's term history (follower.HISTORY_HEADER, which imports this module)
SNAPSHOT_PART_BYTES = 1 << 20
RECEIVING = "state-snapshot.receiving"  # in the data dir while it arrives (not one of the files the log derives)
RETRY_SECONDS = 1.0  # a snapshot this follower could not use yet (its log is short of it) is asked again after this


class BehindLeader(Exception):
    """The leader's log starts past this follower's end: the follower must begin at ``log_start`` (``catch_up``)."""

    def __init__(self, log_start: int) -> None:
        super().__init__(f"the leader's log starts at {log_start}, past this follower's end")
        self.log_start = log_start


def snapshot_part(store: MessageStore, entries: int | None, offset: int) -> tuple[bytes, int, int]:
    """The leader's side of ``take_snapshot``: a part of its snapshot file (``state_snapshot.read_part``)."""
    return state_snapshot.read_part(Path(store.config.data_dir), entries, offset, SNAPSHOT_PART_BYTES)


class Snapshot:
    """A leader's snapshot file received whole (``path``), the leader's log start and term history when it was asked."""

    def __init__(self, path: Path, log_start: int, history: list[tuple[int, int]]) -> None:
        self.path = path
        self.log_start = log_start
        self.history = history


async def take_snapshot(http: PeerClient, leader_url: str, node_id: str, root: Path) -> Snapshot:
    """The leader's newest state snapshot, written part by part to ``RECEIVING`` under ``root`` and checked whole
    (header, length, CRC: ``state_snapshot.check_whole``; Unusable otherwise). A part of another snapshot (the leader
    wrote a new one meanwhile) starts it again."""
    path = root / RECEIVING
    for _ in range(5):
        fh = await asyncio.to_thread(open, path, "wb")
        try:
            taken = await _take_parts(http, leader_url, node_id, fh)
            if taken is not None:
                await asyncio.to_thread(_fsync, fh)
        finally:
            await asyncio.to_thread(fh.close)
        if taken is not None:
            await asyncio.to_thread(state_snapshot.check_whole, path)
            return Snapshot(path, *taken)
    raise state_snapshot.Unusable("the leader replaced its snapshot during each of 5 transfers")


async def _take_parts(http: PeerClient, leader_url: str, node_id: str,
                      fh: BinaryIO) -> tuple[int, list[tuple[int, int]]] | None:
    """Every part of one snapshot into ``fh``: (the leader's log start, its term history); None if it was replaced."""
    entries: int | None = None
    offset, size, log_start, history = 0, -1, 0, []
    while size < 0 or offset < size:
        params: dict[str, str | int] = {"node_id": node_id, "offset": offset}
        if entries is not None:
            params["entries"] = entries
        answer = await http.get(f"{leader_url}/v1/replication/snapshot", params=params)
        if answer.status_code == 404 and entries is not None:
            return None  # that one was replaced (the leader keeps two): the newest, from the start
        answer.raise_for_status()
        entries = int(answer.headers[SNAPSHOT_ENTRIES_HEADER])
        size = int(answer.headers[SNAPSHOT_SIZE_HEADER])
        log_start = int(answer.headers[LOG_START_HEADER])
        history = [(int(t), int(s)) for t, s in json.loads(answer.headers.get(HISTORY_HEADER, "[]"))]
        if not answer.content and offset < size:
            raise state_snapshot.Unusable(f"the leader's snapshot ends at {offset} of {size} bytes")
        await asyncio.to_thread(fh.write, answer.content)
        offset += len(answer.content)
    return log_start, history


def _fsync(fh: BinaryIO) -> None:
    fh.flush()
    os.fsync(fh.fileno())


class SnapshotTaker:
    """Takes the leader's state snapshot into this node's data dir and installs it if this node's log holds what it
    counts; one transfer at a time (there is one ``RECEIVING`` file), for the log start and for promotions alike."""

    def __init__(self, node_id: str, http: PeerClient) -> None:
        self._node_id = node_id
        self._http = http
        self._one = asyncio.Lock()

    async def take_and_install(self, leader_url: str, store: MessageStore, starting_at: int = 0) -> bool:
        """Whether the leader's newest snapshot is now this node's: False when this log is short of what it counts or
        its last counted entry starts below ``starting_at`` (the log start it is taken for); asked again later."""
        root = Path(store.config.data_dir)
        async with self._one:
            taken = await take_snapshot(self._http, leader_url, self._node_id, root)
            header = state_snapshot.header_of(taken.path)
            if not state_snapshot.counts_this_log(store, header) or header.entry_start < starting_at:
                taken.path.unlink(missing_ok=True)
                return False
            await asyncio.to_thread(state_snapshot.install, root, taken.path)
            return True


class LogStartFollower:
    """Moves this follower's log start to its leader's, once its own state snapshot no longer needs the log below it."""

    def __init__(self, node_id: str, snapshots: SnapshotTaker, clock: Callable[[], float] = time.monotonic) -> None:
        self._node_id = node_id
        self._snapshots = snapshots
        self._clock = clock
        self._asked_at: float | None = None

    async def follow(self, leader_url: str, store: MessageStore, leader_start: int) -> None:
        """Delete below ``leader_start`` (the leader's, from a run of its stream) if this node may now; else nothing yet.

        Only at a segment this log has (the same size rule rolls segments at the same offsets), and only once this
        node's state snapshot is served by the log from there (``state_snapshot.replay_start_offset``): else it takes
        the leader's first (at most every ``RETRY_SECONDS``, until its own log holds what that one counts)."""
        if leader_start <= store.log_start.offset or leader_start not in store.commit_log.segment_bases():
            return
        if await asyncio.to_thread(state_snapshot.replay_start_offset, store) < leader_start:
            now = self._clock()
            if self._asked_at is not None and now - self._asked_at < RETRY_SECONDS:
                return
            self._asked_at = now
            try:
                if not await self._snapshots.take_and_install(leader_url, store, starting_at=leader_start):
                    return  # this log is short of what it counts: asked again later
            except (PeerError, state_snapshot.Unusable, OSError) as exc:  # replication goes on; asked again later
                log.warning("node %s: cannot take the leader's state snapshot yet: %r", self._node_id, exc)
                return
        await asyncio.to_thread(store.log_start.advance, leader_start)
