"""The log start: the lowest commit-log offset the store still holds, recorded in ``log_start.json``.

Retention records the new start before it deletes a segment, so a crash between the two leaves segments below the
recorded start, which the next open deletes (``finish``), and a segment missing below the first one kept is never
taken for retention's work: a first segment that starts past the recorded start was deleted by hand, and
``halfmq broker --verify`` reports it (verify.py). Without the file (a store from before retention) the start is 0.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from .atomic_file import fsync_dir, read_json, write_json, write_whole
from .commit_log import segment_name
from .store_types import store_log

if TYPE_CHECKING:
    from .commit_log import CommitLog
    from .write_gate import WriteGate

FILE = "log_start.json"
# What a data dir holds that derives from its log, below a log start or not: a follower begun at its leader's log
# start (``begin_at``) has none of it. The term history, the receipt key and the producers file are not the log's.
FROM_THE_LOG = ("commitlog", "consumequeue", "index", "timers", "checkpoint.json", "consumer_offsets.json", "topics.json",
                "state-snapshot.json", "state-snapshot.previous.json", "acks-checkpoint.json")


def _parse(raw: dict) -> int:
    offset = raw["offset"]
    if not isinstance(offset, int) or offset < 0:
        raise ValueError("offset is not a non-negative integer")
    return offset


def read_log_start(root: Path) -> int:
    """The recorded log start under ``root`` (0 when none is recorded); DamagedFile when the file is not ours."""
    return read_json(root / FILE, 0, _parse, remedy="delete it if no segment was ever deleted by retention")


def write_log_start(root: Path, offset: int) -> None:
    """Record ``offset`` as the log start, durably, before anything below it is deleted."""
    write_json(root / FILE, {"offset": offset})


class LogStart:
    """The store's log start (``offset``) and the one way to move it (``advance``), apart from MessageStore so the
    store's surface stays what writers and readers call. ``drop_below`` is the store's: under its write lock, the
    consume queues and the key index drop their files below an offset."""

    def __init__(self, root: Path, commit_log: CommitLog, gate: WriteGate,
                 drop_below: Callable[[int], list[Path]]) -> None:
        self._root = root
        self._commit_log = commit_log
        self._gate = gate
        self._drop_below = drop_below
        self._lock = threading.Lock()  # one retention pass at a time
        self.offset = self._finish()

    def _finish(self) -> int:
        """The recorded log start: segments a crash left below it go now; a first segment past it was deleted by hand
        (logged here, reported by ``halfmq broker --verify``)."""
        recorded = read_log_start(self._root)
        self._commit_log.delete_below(recorded)
        if self._commit_log.min_offset > recorded:
            store_log.error("the commit log starts at %d but retention kept it from %d: segment files were deleted by "
                            "hand; consumers skip what they held (`halfmq broker --verify` reports it)",
                            self._commit_log.min_offset, recorded)
        return max(recorded, self._commit_log.min_offset)

    def advance(self, offset: int) -> list[Path]:
        """Move the log start to ``offset`` (a segment base retention chose, retention.py): record it, then delete the
        segments below it and the consume-queue and key-index files that point only there; return the paths deleted.

        Sends wait only while the queues and the index drop their files (the writer appends to the same lists): the
        record's fsync and the segments' unlinks (a large file's takes a while) are outside the write lock.
        """
        with self._lock:
            if offset <= self.offset or self._gate.closed:
                return []
            write_log_start(self._root, offset)
            self.offset = offset
            deleted = self._drop_below(offset)
            return self._commit_log.delete_below(offset) + deleted


STAGING = "begin-at.staging"  # a data dir being built beside the old one: a restart deletes it (the old one stays)
READY = "begin-at.ready"  # the same, complete and durable: a restart finishes moving it in (``finish_begin``)
MOVED_IN = ("commitlog", "state-snapshot.json", FILE)  # what READY holds of the log's, moved over the old in this order


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def begin_at(root: Path, offset: int, snapshot: Path, also: Mapping[str, bytes] | None = None,
             reached: Callable[[str], None] = lambda step: None) -> None:
    """Make the (closed) data dir ``root`` an empty log that begins at ``offset`` with ``snapshot`` (its leader's state
    snapshot, received whole under ``root``) as its own, and ``also``'s files (the term history); a set's follower behind
    its leader's log start (Raft's InstallSnapshot, Kafka's log start offset). What derives from the old log goes.

    Atomic across a crash: the new dir is built in STAGING (one empty segment at ``offset``, the snapshot, the recorded
    start, ``also``), made durable, then renamed READY in one step; only then does the old go and the new move in.
    A restart (``finish_begin``, as the store opens) deletes a STAGING, the old data dir untouched (the follower is
    behind again and takes the snapshot again), and completes a READY. ``reached`` names each step as it is done (a
    test crashes there)."""
    finish_begin(root)  # (one a crash left)
    staging = root / STAGING
    staging.mkdir()
    log_dir = staging / "commitlog"
    log_dir.mkdir()
    fd = os.open(log_dir / segment_name(offset), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    fsync_dir(log_dir)
    os.replace(snapshot, staging / "state-snapshot.json")  # fsynced as it arrived (catch_up.take_snapshot)
    write_log_start(staging, offset)
    for name, data in (also or {}).items():
        write_whole(staging / name, data)
    fsync_dir(staging)
    reached("staged")
    os.replace(staging, root / READY)
    fsync_dir(root)
    reached("ready")
    _move_in(root, reached)
    store_log.warning("the data dir %s begins at log offset %d now: this follower was behind its leader's log start", root, offset)


def finish_begin(root: Path) -> None:
    """What a crash left of ``begin_at``: a STAGING goes (the old data dir stands), a READY is moved in."""
    _remove(root / STAGING)
    if (root / READY).is_dir():
        store_log.warning("the data dir %s: completing its switch to its leader's log start, which a crash interrupted", root)
        _move_in(root, lambda step: None)


def _move_in(root: Path, reached: Callable[[str], None]) -> None:
    """READY over the old data dir; each step may be done again after a crash (READY stays until the last)."""
    ready = root / READY
    for name in FROM_THE_LOG:  # the old's derived files: while READY stands none of them is the new's
        if name not in MOVED_IN:
            _remove(root / name)
    reached("old-derived-removed")
    for name in sorted(p.name for p in ready.iterdir() if p.name not in MOVED_IN) + list(MOVED_IN):
        if (ready / name).exists():  # else moved in before a crash
            _remove(root / name)
            os.replace(ready / name, root / name)
            reached(f"moved {name}")
    fsync_dir(root)
    ready.rmdir()
    fsync_dir(root)
