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
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from .atomic_file import read_json, write_json
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


def begin_at(root: Path, offset: int) -> None:
    """Make the (closed) data dir ``root`` an empty log that begins at ``offset``: a follower of a broker set that is
    behind its leader's log start, about to take the leader's state snapshot and the log from there (Raft's
    InstallSnapshot, Kafka's log start offset). What derives from the old log goes; the start is recorded first, and
    one empty segment at ``offset`` is where the leader's bytes land (a crash midway leaves a log that begins there or
    a store whose next open deletes the rest below the recorded start, as after retention)."""
    write_log_start(root, offset)
    for name in FROM_THE_LOG:
        path = root / name
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)
    log_dir = root / "commitlog"
    log_dir.mkdir()
    fd = os.open(log_dir / segment_name(offset), os.O_RDWR | os.O_CREAT, 0o644)
    os.close(fd)
    store_log.warning("the data dir %s begins at log offset %d now: this follower was behind its leader's log start", root, offset)
