"""``halfmq broker --verify``: a full, read-only check of a data directory.

Start-up validates the commit log only past its checkpoint, and reads find
damage behind it one record at a time. This walks every record of every
segment (resynchronising after damage as recovery does) and checks every
consume-queue entry against the record it should index, so an operator learns
everything that is damaged before trusting, restoring or replacing a disk.
Findings the next start repairs on its own (a torn tail, a consume queue short
of the log) are listed apart from damage.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .commit_log import NAME_WIDTH, CommitLog, Damage
from .consume_queue import ENTRY, ENTRY_SIZE, first_break, queue_files
from .data_lock import DataDirLock
from .log_start import read_log_start

READ_AHEAD = 4096  # consume-queue entries read at a time per queue


@dataclass(frozen=True)
class Finding:
    path: Path
    offset: int  # byte within that file
    what: str
    repaired_at_start: bool = False

    def __str__(self) -> str:
        label = "REPAIRED AT START" if self.repaired_at_start else "DAMAGED"
        return f"{label}: {self.path} byte {self.offset}: {self.what}"


@dataclass
class VerifyReport:
    findings: list[Finding] = field(default_factory=list)
    records: int = 0
    entries: int = 0

    @property
    def damaged(self) -> bool:
        return any(not f.repaired_at_start for f in self.findings)


class _QueueReader:
    """One queue's entries, read forward in chunks (records of a queue appear in queue order in the log)."""

    def __init__(self, directory: Path, file_bytes: int, retained: bool) -> None:
        self.directory = directory
        self.file_bytes = file_bytes
        files = queue_files(directory) if directory.is_dir() else []
        self.broken = first_break(files, file_bytes, retained)
        usable = files if self.broken is None else files[: self.broken[0]]
        self.end = (int(usable[-1][0].name) + usable[-1][1]) // ENTRY_SIZE if usable else 0  # what a start would keep
        self.checked_to = int(usable[0][0].name) // ENTRY_SIZE if usable else 0  # one past the highest queue offset the log holds
        self._chunk_start = 0
        self._chunk = b""

    def entry(self, queue_offset: int) -> tuple[int, int] | None:
        if queue_offset >= self.end:
            return None
        i = queue_offset - self._chunk_start
        if not 0 <= i * ENTRY_SIZE < len(self._chunk):
            self._load(queue_offset)
            i = 0
        clog, size, _ = ENTRY.unpack_from(self._chunk, i * ENTRY_SIZE)
        return clog, size

    def path_of(self, queue_offset: int) -> tuple[Path, int]:
        pos = queue_offset * ENTRY_SIZE
        base = pos - pos % self.file_bytes
        return self.directory / f"{base:0{NAME_WIDTH}d}", pos - base

    def _load(self, queue_offset: int) -> None:
        path, at = self.path_of(queue_offset)
        with open(path, "rb") as fh:
            fh.seek(at)
            self._chunk = fh.read(min(READ_AHEAD * ENTRY_SIZE, self.file_bytes - at))
        self._chunk_start = queue_offset


def verify_store(data_dir: Path, consume_queue_entries: int, progress: Callable[[int, int], None] = lambda done, total: None) -> VerifyReport:
    """Check everything under ``data_dir`` without changing it; ``progress(bytes done, bytes total)`` as it goes.

    Holds the data directory's lock, so it refuses (DataDirLocked) while a broker runs there.
    """
    lock = DataDirLock(data_dir)
    lock.acquire()
    try:
        return _verify(Path(data_dir), consume_queue_entries * ENTRY_SIZE, progress)
    finally:
        lock.release()


def _verify(root: Path, file_bytes: int, progress: Callable[[int, int], None]) -> VerifyReport:
    log_start = read_log_start(root)
    check = _QueueCheck(root / "consumequeue", file_bytes, log_start)
    log_dir = root / "commitlog"
    if log_dir.is_dir() and any(p.name.isdigit() and len(p.name) == NAME_WIDTH for p in log_dir.iterdir()):
        log = CommitLog(log_dir, segment_bytes=1 << 62)  # never written: the size only matters to appends
        try:
            _check_log_start(log, log_start, check.report)
            _walk_log(log, check, progress, max(log_start, log.min_offset))
        finally:
            log.close()
    check.finish()
    return check.report


def _check_log_start(log: CommitLog, log_start: int, report: VerifyReport) -> None:
    """Retention's deletions are no damage; a first segment past the recorded log start is (deleted by hand: the
    consumers skip what it held), and segments left below it (a crash during retention) go at the next start."""
    if log.min_offset > log_start:
        report.findings.append(Finding(log.directory / f"{log.min_offset:0{NAME_WIDTH}d}", 0,
                                       f"segment files missing below the first one: nothing holds offsets {log_start} to "
                                       f"{log.min_offset}, and retention kept the log from {log_start} (deleted by hand?)"))
    for base in log.segment_bases():
        if base < log_start and base != log.segment_bases()[-1]:
            report.findings.append(Finding(log.directory / f"{base:0{NAME_WIDTH}d}", 0,
                                           f"segment below the log start {log_start}: retention deletes it at the next start",
                                           repaired_at_start=True))


def _walk_log(log: CommitLog, check: _QueueCheck, progress: Callable[[int, int], None], start: int) -> None:
    report = check.report
    for end, base in log.segment_gaps():
        if base > start:
            report.findings.append(Finding(log.directory / f"{base:0{NAME_WIDTH}d}", 0,
                                           f"segment files missing: nothing holds offsets {end} to {base}"))
    total = log.end_offset - start
    reported = start
    check.log_end = log.end_offset
    for at, item in log.walk(start):
        if isinstance(item, Damage):
            after = (f"next valid record at offset {item.next_valid}" if item.next_valid is not None
                     else "nothing valid after it: a torn tail, truncated at the next start")
            report.findings.append(Finding(item.path, item.file_offset, f"{item.field} ({item.reason}); {after}",
                                           repaired_at_start=item.next_valid is None))
            if item.next_valid is None:
                check.log_end = at  # where the next start truncates the log
            continue
        report.records += 1
        check.record(item.topic, item.queue_id, item.queue_offset, at, item.size)
        if at - reported >= 1 << 20:
            progress(at - start, total)
            reported = at
    progress(total, total)


class _QueueCheck:
    """Each record's consume-queue entry must exist and point back at it."""

    def __init__(self, root: Path, file_bytes: int, log_start: int) -> None:
        self.root = root
        self.file_bytes = file_bytes
        self.log_start = log_start
        self.retained = log_start > 0
        self.report = VerifyReport()
        self.readers: dict[tuple[str, int], _QueueReader] = {}
        self.log_end = 0
        if root.is_dir():
            for topic_dir in sorted(root.iterdir()):
                for qdir in sorted(q for q in topic_dir.iterdir() if q.name.isdigit()):
                    reader = self._reader(topic_dir.name, int(qdir.name))
                    if reader.broken is not None:
                        index, why = reader.broken
                        self.report.findings.append(Finding(qdir, index * file_bytes, f"consume queue: {why}", repaired_at_start=True))

    def _reader(self, topic: str, queue_id: int) -> _QueueReader:
        reader = self.readers.get((topic, queue_id))
        if reader is None:
            reader = self.readers[(topic, queue_id)] = _QueueReader(self.root / topic / str(queue_id), self.file_bytes, self.retained)
        return reader

    def record(self, topic: str, queue_id: int, queue_offset: int, at: int, size: int) -> None:
        reader = self._reader(topic, queue_id)
        reader.checked_to = max(reader.checked_to, queue_offset + 1)
        entry = reader.entry(queue_offset)
        if entry is None:
            return  # short of the log: reported once per queue by finish()
        self.report.entries += 1
        if entry != (at, size):
            path, byte = reader.path_of(queue_offset)
            self.report.findings.append(Finding(path, byte, f"consume queue {topic}/{queue_id} entry {queue_offset} points at "
                                                            f"offset {entry[0]} ({entry[1]} bytes); the log holds it at {at} ({size} bytes)"))

    def finish(self) -> None:
        for (topic, queue_id), reader in sorted(self.readers.items()):
            while reader.checked_to < reader.end and (below := reader.entry(reader.checked_to)) is not None and below[0] < self.log_start:
                reader.checked_to += 1  # an entry of a record retention deleted: the next start passes over it
            if reader.end < reader.checked_to:
                self.report.findings.append(Finding(reader.directory, reader.end * ENTRY_SIZE, f"consume queue {topic}/{queue_id} "
                                                    f"lacks entries {reader.end} to {reader.checked_to - 1}", repaired_at_start=True))
            elif reader.end > reader.checked_to:
                first = reader.entry(reader.checked_to)
                past_end = first is not None and first[0] + first[1] > self.log_end
                path, byte = reader.path_of(reader.checked_to)
                self.report.findings.append(Finding(path, byte, f"consume queue {topic}/{queue_id} has {reader.end - reader.checked_to} "
                                                    "entries past the queue's last record in the log", repaired_at_start=past_end))
