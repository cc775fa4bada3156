"""Consume queue: the index of one (topic, queue) into the commit log.

Fixed 20-byte entries (commit-log offset i64, size i32, tag hash i64), so queue
offset N lives at byte 20·N. Files hold ``entries_per_file`` entries and are
named by the byte offset of their first entry. Consume queues are derived data:
nothing here is fsynced on the send path, and recovery rebuilds missing tails
from the commit log.
"""

from __future__ import annotations

import bisect
import logging
import os
import struct
from dataclasses import dataclass
from pathlib import Path

from .file_handles import FileHandles

log = logging.getLogger(__name__)

ENTRY = struct.Struct("<qiq")
ENTRY_SIZE = ENTRY.size  # 20
NAME_WIDTH = 20


@dataclass(frozen=True, slots=True)
class QueueEntry:
    commit_log_offset: int
    size: int
    tag_hash: int


def queue_files(directory: Path) -> list[tuple[Path, int]]:
    """A queue's files in order, with their lengths."""
    paths = sorted(p for p in directory.iterdir() if p.name.isdigit() and len(p.name) == NAME_WIDTH)
    return [(p, p.stat().st_size) for p in paths]


def first_break(files: list[tuple[Path, int]], file_bytes: int, retained: bool = False) -> tuple[int, str] | None:
    """Where a queue's files stop forming one unbroken run: (index, why), or None.

    Every file but the last must be full and each must start where the one before ended. The run starts at queue
    offset 0, or, once retention deleted files (``retained``: the log start is past 0), at any file boundary.
    """
    expected = int(files[0][0].name) if files and retained else 0
    if expected % file_bytes:
        return 0, f"file {files[0][0].name} does not start at a file boundary"
    for i, (path, length) in enumerate(files):
        if int(path.name) != expected:
            return i, f"file {path.name} should start at byte {expected} (a file is missing)"
        if i < len(files) - 1 and length != file_bytes:
            return i, f"file {path.name} holds {length} of {file_bytes} bytes"
        expected += file_bytes
    return None


class ConsumeQueue:
    """One queue's files. Only the last is written, through its own descriptor (``_writer``); a rolled file's goes at
    the next ``flush`` after its fsync (``_retired``). Reads open what they read through the store's ``FileHandles``
    (bounded), so the descriptors do not grow with the queue's history."""

    def __init__(self, directory: Path, topic: str, queue_id: int, entries_per_file: int,
                 handles: FileHandles | None = None, retained: bool = False) -> None:
        self.topic = topic
        self.queue_id = queue_id
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.file_bytes = entries_per_file * ENTRY_SIZE
        self._handles = handles or FileHandles()
        self._files: list[int] = []  # each file's base byte offset, ordered
        self._writer: tuple[int, int] | None = None  # (base, fd) of the last file, opened to write on first use
        self._retired: list[int] = []  # writer descriptors of rolled files: fsynced, then closed, by the next flush
        self._size = 0  # logical bytes: base of last file + its length
        self._dirty: set[int] = set()
        self._start = 0  # the first queue offset whose record the log still holds (retention moves it: ``forget_below``)
        self.repaired = False  # files were missing or short at open: recovery must refill from the commit log
        self._open_existing(retained)

    def _open_existing(self, retained: bool) -> None:
        """Open the unbroken run of files (``first_break``: from queue offset 0, or past it when retention deleted the
        first ones) and delete the rest: recovery refills the queue from the commit log (``repaired``), so no reader
        meets a hole."""
        files = queue_files(self.directory)
        broken = first_break(files, self.file_bytes, retained)
        keep = files if broken is None else files[: broken[0]]
        for path, _ in keep:
            self._files.append(int(path.name))
        if broken is not None:
            self._drop([path for path, _ in files[broken[0]:]], broken[1])
        if self._files:
            base, fd = self._writer_fd()
            length = os.fstat(fd).st_size
            self._size = base + length - (length % ENTRY_SIZE)
            if length % ENTRY_SIZE:
                os.ftruncate(fd, length - length % ENTRY_SIZE)

    def _drop(self, paths: list[Path], why: str) -> None:
        log.warning("consume queue %s/%d: %s; rebuilding it from queue offset %d on from the commit log", self.topic, self.queue_id,
                    why, (self._files[-1] + self.file_bytes if self._files else 0) // ENTRY_SIZE)
        for path in paths:
            path.unlink()
        self.repaired = True

    def _path(self, base: int) -> Path:
        return self.directory / f"{base:0{NAME_WIDTH}d}"

    def _writer_fd(self) -> tuple[int, int]:
        """(base, fd) of the last file, its writer's descriptor opened on first use."""
        base = self._files[-1]
        if self._writer is None or self._writer[0] != base:
            self._writer = (base, os.open(self._path(base), os.O_RDWR))
        return self._writer

    def _roll(self, pos: int) -> None:
        """Start the file at byte ``pos``: the last one's writer descriptor is retired (closed after its fsync)."""
        fd = os.open(self._path(pos), os.O_RDWR | os.O_CREAT, 0o644)
        if self._writer is not None:
            self._retired.append(self._writer[1])
        self._writer = (pos, fd)
        self._files.append(pos)

    @property
    def min_offset(self) -> int:
        """The first queue offset a reader gets: past the files retention deleted and the entries below the log start."""
        first = self._files[0] // ENTRY_SIZE if self._files else 0
        return min(max(first, self._start), self.max_offset)

    def forget_below(self, log_start: int) -> list[Path]:
        """Start the queue at its first entry whose record is at or past ``log_start``; delete the files wholly below it.

        The last file stays (an empty queue keeps counting from where it was); return the paths deleted. Entries of
        one queue point forward in the log, so the first kept entry is found by bisection. Each file is unlinked, then
        forgotten by the handles (``FileHandles.forget``: a reader inside ``use`` keeps its descriptor until it lets go;
        one opening it after the unlink reads nothing, as below ``min_offset``). A deleted file's writer descriptor (a
        rolled file not yet fsynced) stays with ``flush``, which fsyncs and closes it as before.
        """
        lo, hi = self.min_offset, self.max_offset
        while lo < hi:
            mid = (lo + hi) // 2
            entry = self.get(mid)
            if entry is not None and entry.commit_log_offset < log_start:
                lo = mid + 1
            else:
                hi = mid
        self._start = max(self._start, lo)
        deleted: list[Path] = []
        while len(self._files) > 1 and self._files[1] // ENTRY_SIZE <= self._start:
            base = self._files[0]
            self._files = self._files[1:]  # a new list: a reader's ``_locate`` walks the one it read
            path = self._path(base)
            path.unlink(missing_ok=True)
            self._handles.forget(path)
            deleted.append(path)
        return deleted

    def begin_at(self, queue_offset: int) -> None:
        """Make a queue that has no file yet begin at ``queue_offset`` (a follower begun at its leader's log start: the
        first record it gets names its queue offset, and the offsets must be the leader's). The file holding it starts at
        its boundary, as the leader's first kept file does; the entries before it point at offset 0, below the log start
        (``forget_below`` and ``halfmq broker --verify`` pass over them). Nothing happens to a queue that has files."""
        if self._files or queue_offset <= 0:
            return
        base = queue_offset * ENTRY_SIZE // self.file_bytes * self.file_bytes
        self._roll(base)
        _, fd = self._writer_fd()
        os.pwrite(fd, bytes(queue_offset * ENTRY_SIZE - base), 0)
        self._dirty.add(fd)
        self._size = queue_offset * ENTRY_SIZE
        self._start = queue_offset

    @property
    def max_offset(self) -> int:
        """One past the last entry: the queue offset the next message gets."""
        return self._size // ENTRY_SIZE

    def append(self, commit_log_offset: int, size: int, tag_hash: int) -> int:
        pos = self._size
        if not self._files or pos - self._files[-1] >= self.file_bytes:
            self._roll(pos)
        base, fd = self._writer_fd()
        os.pwrite(fd, ENTRY.pack(commit_log_offset, size, tag_hash), pos - base)
        self._dirty.add(fd)
        self._size = pos + ENTRY_SIZE
        return pos // ENTRY_SIZE

    def append_many(self, entries: list[tuple[int, int, int]]) -> None:
        """Append entries with one write per file they land in (a batch send costs a syscall, not N)."""
        i = 0
        while i < len(entries):
            pos = self._size
            if not self._files or pos - self._files[-1] >= self.file_bytes:
                self._roll(pos)
            base, fd = self._writer_fd()
            room = (base + self.file_bytes - pos) // ENTRY_SIZE
            chunk = entries[i : i + room]
            os.pwrite(fd, b"".join(ENTRY.pack(*e) for e in chunk), pos - base)
            self._dirty.add(fd)
            self._size = pos + ENTRY_SIZE * len(chunk)
            i += len(chunk)

    def _locate(self, pos: int) -> int | None:
        """The base of the file holding byte ``pos``; None when retention deleted it since the caller looked."""
        files = self._files  # one list: retention replaces it (``forget_below``)
        idx = bisect.bisect_right(files, pos) - 1
        return files[idx] if idx >= 0 else None

    def get(self, queue_offset: int) -> QueueEntry | None:
        entries = self.get_range(queue_offset, 1)
        return entries[0] if entries else None

    def get_range(self, queue_offset: int, count: int) -> list[QueueEntry]:
        """Up to ``count`` entries from ``queue_offset``, stopping at a file boundary or the end."""
        data = self._read_range(queue_offset, count)
        return [QueueEntry(*ENTRY.unpack_from(data, i)) for i in range(0, len(data) - len(data) % ENTRY_SIZE, ENTRY_SIZE)]

    def codes(self, queue_offset: int, count: int) -> list[int]:
        """``get_range``'s third fields only (tag hashes, or timers' due times), without an object per entry."""
        data = self._read_range(queue_offset, count)
        return [code for _, _, code in ENTRY.iter_unpack(data[:len(data) - len(data) % ENTRY_SIZE])]

    def sizes(self, queue_offset: int, count: int) -> list[int]:
        """``get_range``'s record sizes only, without an object per entry (a topic's ``retention_bytes`` counts a whole
        queue of them as a broker opens: topic_retention.py)."""
        data = self._read_range(queue_offset, count)
        return [size for _, size, _ in ENTRY.iter_unpack(data[:len(data) - len(data) % ENTRY_SIZE])]

    def _read_range(self, queue_offset: int, count: int) -> bytes:
        if queue_offset < self.min_offset or queue_offset >= self.max_offset or count <= 0:
            return b""
        pos = queue_offset * ENTRY_SIZE
        base = self._locate(pos)
        if base is None:
            return b""
        n = min(count, (self._size - pos) // ENTRY_SIZE, (base + self.file_bytes - pos) // ENTRY_SIZE)
        try:
            return self._handles.pread(self._path(base), n * ENTRY_SIZE, pos - base)
        except FileNotFoundError:  # retention deleted the file after ``_locate``: its entries are gone, as below min_offset
            return b""

    def last_entry(self) -> QueueEntry | None:
        return self.get(self.max_offset - 1) if self.max_offset > self.min_offset else None

    def truncate_to(self, queue_offset: int) -> None:
        """Drop every entry at or after ``queue_offset`` (recovery only)."""
        pos = max(queue_offset, self.min_offset) * ENTRY_SIZE
        while self._files and self._files[-1] > pos:
            base = self._files.pop()
            if self._writer is not None and self._writer[0] == base:
                self._dirty.discard(self._writer[1])
                os.close(self._writer[1])
                self._writer = None
            self._handles.forget(self._path(base))
            self._path(base).unlink()
        if self._files:
            base, fd = self._writer_fd()
            os.ftruncate(fd, pos - base)
        self._size = pos if self._files else 0

    def trim_beyond(self, commit_log_end: int) -> int:
        """Drop trailing entries that point past the commit log's valid end; return entries dropped."""
        dropped = 0
        while self.max_offset > self.min_offset:
            last = self.last_entry()
            if last is not None and last.size > 0 and last.commit_log_offset + last.size <= commit_log_end:
                break
            self.truncate_to(self.max_offset - 1)
            dropped += 1
        return dropped

    def flush(self) -> None:
        retired, self._retired = self._retired, []  # first: what a file took before it rolled is in ``dirty`` by now
        dirty, self._dirty = self._dirty, set()
        for fd in dirty | set(retired):
            os.fsync(fd)
        for fd in retired:
            os.close(fd)

    def close(self) -> None:
        for fd in self._retired:
            os.close(fd)
        self._retired.clear()
        if self._writer is not None:
            os.close(self._writer[1])
            self._writer = None
        for base in self._files:
            self._handles.forget(self._path(base))
        self._files.clear()
