"""The segmented, append-only commit log shared by every topic.

Segments are named by the byte offset of their first record (20 digits) and
hold at most ``segment_bytes``. A write group never straddles two segments, so
the next segment starts exactly where the previous one ended and offsets stay
contiguous. Appends are a single ``os.write`` of an encoded group; durability
is a separate ``flush`` (fsync of every segment written since the last one) so
that a group-commit thread can share one fsync among many appends.
"""

from __future__ import annotations

import bisect
import logging
import os
import struct
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from .atomic_file import fsync_dir
from .file_handles import FileHandles
from .record import (
    FLAG_GROUP_MORE,
    HEADER_FIELDS,
    HEADER_SIZE,
    MAGIC,
    MAGIC_AT,
    MAX_RECORD_SIZE,
    RecordError,
    StoredMessage,
    claims_offset,
    damaged_field,
    decode,
    peek_size,
)
from .retention import SegmentFacts

log = logging.getLogger(__name__)

NAME_WIDTH = 20
SCAN_CHUNK = 8 * 1024 * 1024
_FLAGS_AT = HEADER_FIELDS["flags"]  # (little-endian: FLAG_GROUP_MORE is in this byte)


class CorruptLogError(Exception):
    """A record before the tail is damaged: refusing to guess what it held."""


_SIZE_AND_FLAGS = struct.Struct(f"<I{_FLAGS_AT - 4}xB")  # a header's size, and its flags' low byte (FLAG_GROUP_MORE's)


def whole_groups_end(data: bytes | memoryview) -> int:
    """Where the last whole write group at the front of ``data`` (log bytes from a group's start) ends; 0: none whole.
    Only the headers' sizes and flags are read (the follower checks the rest): ~0.2 us a record, one unpack each (a
    slice and int.from_bytes took ~0.5-1 us). Bytes whose sizes make no sense are left whole, for the follower to refuse."""
    at = last = 0
    length = len(data)
    unpack = _SIZE_AND_FLAGS.unpack_from
    while at + HEADER_SIZE <= length:
        size, flags = unpack(data, at)
        if size < HEADER_SIZE:
            return length
        if at + size > length:
            break
        at += size
        if not flags & FLAG_GROUP_MORE:
            last = at
    return last


@dataclass(frozen=True)
class Damage:
    """A damaged record: where it is, which field looks hit, and where intact records resume (None: nowhere)."""

    offset: int
    path: Path
    field: str
    reason: str
    next_valid: int | None

    @property
    def file_offset(self) -> int:
        return self.offset - int(self.path.name)

    def __str__(self) -> str:
        after = f"next valid record at offset {self.next_valid}" if self.next_valid is not None else "nothing valid after it (a torn tail)"
        return (f"commit log record at offset {self.offset} ({self.path}, byte {self.file_offset}) is damaged: "
                f"{self.field} ({self.reason}); {after}")


@dataclass
class Segment:
    """A segment file. ``fd`` is the writer's descriptor: the last segment's, and a rolled one's until its bytes are
    fsynced (then closed by ``flush``); None for a sealed one, which is read through the store's ``FileHandles``."""

    base: int
    path: Path
    fd: int | None
    size: int
    flushed: int

    @property
    def end(self) -> int:
        return self.base + self.size


def segment_name(offset: int) -> str:
    return f"{offset:0{NAME_WIDTH}d}"


class CommitLog:
    def __init__(self, directory: Path, segment_bytes: int, handles: FileHandles | None = None) -> None:
        self.directory = Path(directory)
        self.segment_bytes = segment_bytes
        self._handles = handles or FileHandles()  # reads open what they read (bounded), not every segment for ever
        self.directory.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._flushing = threading.Lock()  # held by a flush throughout: retention closes no descriptor it fsyncs
        self._leftovers: Segment | None = None  # a failed write's bytes past its segment's end, not yet cut off
        self._segments: list[Segment] = []
        self._bases: list[int] = []
        for path in sorted(self.directory.iterdir()):
            if path.name.isdigit() and len(path.name) == NAME_WIDTH:
                size = path.stat().st_size
                self._add(Segment(int(path.name), path, None, size, size))
        if not self._segments:
            self._new_segment(0)
        last = self._segments[-1]
        if last.fd is None:
            last.fd = os.open(last.path, os.O_RDWR)

    # --- layout -----------------------------------------------------------------
    def _add(self, seg: Segment) -> None:
        self._segments.append(seg)
        self._bases.append(seg.base)

    def _new_segment(self, base: int) -> Segment:
        path = self.directory / segment_name(base)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        seg = Segment(base, path, fd, 0, 0)
        self._add(seg)
        fsync_dir(self.directory)
        return seg

    @property
    def min_offset(self) -> int:
        return self._segments[0].base

    @property
    def end_offset(self) -> int:
        """Offset one past the last byte written (the next append's offset)."""
        return self._segments[-1].end

    @property
    def segment_count(self) -> int:
        return len(self._segments)

    def segment_bases(self) -> list[int]:
        return list(self._bases)

    @property
    def last_base(self) -> int:
        """The base of the segment being written (``segment_bases()[-1]`` without copying every base)."""
        return self._bases[-1]

    def _reading(self, seg: Segment) -> AbstractContextManager[int]:
        """A descriptor to read ``seg`` with, held for the block (the store's bounded table of them)."""
        return _read_through(self._handles, seg)

    def segment_facts(self) -> list[SegmentFacts]:
        """Each segment's extent and last write (the file's mtime, as RocketMQ's fileReservedTime judges it): a stat of
        the path, so judging the log opens no descriptor."""
        return [SegmentFacts(seg.base, seg.end, seg.path.stat().st_mtime_ns // 1_000_000) for seg in self._segments]

    # --- retention ----------------------------------------------------------------
    def delete_below(self, offset: int) -> list[Path]:
        """Delete the whole segments that end at or before ``offset`` (never the last one); return their paths.

        The lists are replaced, never changed in place, so ``_segment_for`` sees one consistent layout. Each file is
        unlinked, then forgotten by the handles (``FileHandles.forget``): a reader inside ``use`` keeps its descriptor
        until it lets go (the table closes it then), and once the path is gone no reader can open it again, so the
        table never keeps a deleted segment's descriptor (nor its disk space). A reader that looked the segment up a
        moment before and opens it after the unlink gets a KeyError, as a read below the log start does. A rolled
        segment ``flush`` has not fsynced yet has its writer's descriptor closed here, between two flushes.
        """
        # ``_flushing``: no flush is between taking its segments and closing their writers' descriptors. ``_lock``: the
        # writer's roll to a new segment takes it too, so the list swap and the append never interleave.
        with self._flushing, self._lock:
            gone = 0
            while gone < len(self._segments) - 1 and self._segments[gone].end <= offset:
                gone += 1
            retired = self._segments[:gone]
            self._segments = self._segments[gone:]
            self._bases = self._bases[gone:]
            for seg in retired:  # a rolled segment not fsynced yet: its writer's descriptor (``flush`` is not running)
                if seg.fd is not None:
                    os.close(seg.fd)
                    seg.fd = None
        for seg in retired:  # outside the lock: unlinking a large file takes a while, and the writer may roll meanwhile
            seg.path.unlink(missing_ok=True)
            self._handles.forget(seg.path)
        if retired:
            fsync_dir(self.directory)
        return [seg.path for seg in retired]

    # --- writing ----------------------------------------------------------------
    def next_offset_for(self, size: int) -> int:
        """Where a group of ``size`` bytes would land, rolling to a new segment if it does not fit.

        Must be called by the single writer, followed by ``write`` of exactly that size.
        """
        if size > self.segment_bytes:
            raise ValueError(f"a write group of {size} bytes exceeds the segment size {self.segment_bytes}")
        self._cut_leftovers()
        last = self._segments[-1]
        if last.size and last.size + size > self.segment_bytes:
            with self._lock:
                self._new_segment(last.end)
        return self._segments[-1].end

    def write(self, blob: bytes | bytearray | memoryview) -> int:
        """Append ``blob`` whole, or raise OSError having appended nothing.

        A full disk takes part of a write before refusing the rest. Those bytes
        are cut off at once: the next write starts where this one did, and a
        shorter one must not leave the tail of a failed one behind it for
        recovery to find.
        """
        self._cut_leftovers()
        seg = self._segments[-1]
        fd = _writer_fd(seg)
        view = memoryview(blob)
        written = 0
        try:
            while written < len(view):
                written += os.pwrite(fd, view[written:], seg.size + written)
        except OSError:
            self._leftovers = seg
            try:
                self._cut_leftovers()
            except OSError:
                pass  # cut before the next write, which fails until then
            raise
        start = seg.end
        seg.size += written
        return start

    def _cut_leftovers(self) -> None:
        seg = self._leftovers
        if seg is not None:
            os.ftruncate(_writer_fd(seg), seg.size)
            self._leftovers = None

    def flush(self) -> int:
        """fsync every segment with unflushed bytes; return the offset now durable."""
        with self._flushing:
            return self._flush()

    def _flush(self) -> int:
        with self._lock:
            end = self.end_offset  # read before the sizes, so every byte below it is covered below
            dirty = [(seg, seg.size) for seg in self._segments if seg.flushed < seg.size]
        for seg, size in dirty:
            os.fsync(_writer_fd(seg))
            seg.flushed = max(seg.flushed, size)
        with self._lock:  # a rolled segment is written no more: once fsynced, its writer's descriptor goes
            for seg in self._segments[:-1]:
                if seg.fd is not None and seg.flushed >= seg.size:
                    os.close(seg.fd)
                    seg.fd = None
        return end

    # --- reading ----------------------------------------------------------------
    def _segment_for(self, offset: int) -> Segment:
        segments, bases = self._segments, self._bases
        idx = bisect.bisect_right(bases, offset) - 1
        if idx < 0:
            raise KeyError(offset)
        if idx >= len(segments) or segments[idx].base > offset or (idx + 1 < len(segments) and segments[idx + 1].base <= offset):
            # retention replaced the lists between the two reads above (delete_below): look in the segments alone
            idx = bisect.bisect_right(segments, offset, key=_base_of) - 1
            if idx < 0:
                raise KeyError(offset)
        return segments[idx]

    def read(self, offset: int, size: int) -> bytes:
        seg = self._segment_for(offset)
        try:
            data = self._handles.pread(seg.path, size, offset - seg.base)
        except FileNotFoundError:  # as ``_read_through``: retention deleted the segment since it was looked up
            raise KeyError(seg.base) from None
        if len(data) != size:
            raise RecordError(f"short read at {offset}: wanted {size}, got {len(data)}")
        return data

    def _read_run(self, offset: int, end: int, max_bytes: int) -> bytes:
        """The log's bytes from ``offset`` up to ``end``, at most ``max_bytes``, never past the segment that holds
        ``offset`` (a replica appends a run into its own segment of the same base). Empty from ``end`` on."""
        if offset >= end:
            return b""
        seg = self._segment_for(offset)
        stop = min(end, seg.end, offset + max_bytes)
        return self.read(offset, stop - offset)

    def read_groups(self, offset: int, end: int, max_bytes: int) -> bytes:
        """The log's whole write groups from ``offset`` (where one starts) up to ``end``, at most ``max_bytes``, never
        past the segment that holds ``offset``: a stream's run, which a replica appends into its own segment of the same
        base. Whole groups, because a follower appends only those (replicated_groups.py): a run that ended inside one
        would not move it, and the next would not start where its log ends. A first group larger than ``max_bytes``
        comes whole, alone (a group never spans segments). Empty from ``end`` on."""
        data = self._read_run(offset, end, max_bytes)
        if len(data) < max_bytes:  # it stopped at ``end`` or the segment's end: where a group ends, always
            return data
        cut = whole_groups_end(data)
        if cut:
            return data[:cut]
        return self._read_run(offset, end, self._group_end(offset, end) - offset)

    def _group_end(self, offset: int, end: int) -> int:
        """Where the write group that starts at ``offset`` ends, from its records' headers (at most ``end``)."""
        pos = offset
        while pos < end:
            size, flags = _SIZE_AND_FLAGS.unpack_from(self.read(pos, HEADER_SIZE))
            pos += max(size, HEADER_SIZE)
            if not flags & FLAG_GROUP_MORE:
                break
        return min(pos, end)

    def read_record(self, offset: int, size: int | None = None) -> StoredMessage:
        if size is None:
            size = peek_size(self.read(offset, 4))
        return decode(self.read(offset, size))

    def _scan(self, start: int) -> Iterator[tuple[StoredMessage, int]]:
        segments = self._segments  # one layout: retention replaces the list (delete_below)
        idx = max(bisect.bisect_right(segments, start, key=_base_of) - 1, 0)
        pos = start
        for seg in segments[idx:]:
            pos = max(pos, seg.base)
            need = 0
            while pos < seg.end:
                with self._reading(seg) as fd:
                    buf = os.pread(fd, min(max(SCAN_CHUNK, need), seg.end - pos), pos - seg.base)
                local = need = 0
                while local < len(buf):
                    size = peek_size(buf, local)
                    if local + size > len(buf) and pos + local + size <= seg.end and HEADER_SIZE <= size <= MAX_RECORD_SIZE:
                        need = size  # the record continues past this chunk: re-read from it
                        break
                    try:
                        rec = decode(buf, local)
                    except RecordError as exc:
                        raise _InvalidAt(pos + local, str(exc)) from None
                    yield rec, pos + local
                    local += rec.size
                pos += local

    # --- recovery ---------------------------------------------------------------
    def recover(self, start: int) -> Iterator[StoredMessage]:
        """Validate from ``start`` to the end, truncate a torn tail, yield the surviving records.

        A group is kept whole or dropped whole. Damage followed by a valid record
        is corruption in the middle of the log: CorruptLogError, nothing truncated.
        """
        start = max(start, self.min_offset)
        valid_end = start
        group: list[StoredMessage] = []
        group_start = start
        reason = ""
        try:
            for rec, at in self._scan(start):
                if not group:
                    group_start = at
                group.append(rec)
                if not rec.group_more:
                    yield from group
                    group = []
                    valid_end = at + rec.size
        except _InvalidAt as exc:
            damage = self.damage_at(exc.offset, exc.reason)
            if damage.next_valid is not None:
                raise CorruptLogError(f"{damage}; refusing to start rather than drop the records after it "
                                      "(`halfmq broker --verify` lists all damage)") from None
            reason = exc.reason
        if group:
            log.warning("dropping incomplete write group at offset %d (%d records)", group_start, len(group))
            valid_end = group_start
        if valid_end < self.end_offset:
            log.warning("truncating commit log tail from %d to %d (%s)", self.end_offset, valid_end, reason or "incomplete group")
            self._truncate(valid_end)

    def walk(self, start: int = 0) -> Iterator[tuple[int, StoredMessage | Damage]]:
        """Every record from ``start`` with its offset, and a Damage in place of each damaged stretch.

        After damage the walk resumes at the next intact record, found as recovery finds it.
        """
        pos = max(start, self.min_offset)
        while True:
            try:
                for rec, at in self._scan(pos):
                    yield at, rec
                return
            except _InvalidAt as exc:
                damage = self.damage_at(exc.offset, exc.reason)
                yield exc.offset, damage
                if damage.next_valid is None:
                    return
                pos = damage.next_valid

    def segment_gaps(self) -> list[tuple[int, int]]:
        """(end of a segment, base of the next) wherever a segment file is missing between them."""
        return [(a.end, b.base) for a, b in zip(self._segments, self._segments[1:], strict=False) if a.end != b.base]

    def damage_at(self, offset: int, reason: str) -> Damage:
        """Describe the record at ``offset`` that failed to decode with ``reason``."""
        seg = self._segment_for(offset)
        following = self.next_valid_record(offset)
        if following is None:
            return Damage(offset, seg.path, "unknown", reason, None)
        extent = (following if following < seg.end else seg.end) - offset
        with self._reading(seg) as fd:
            raw = os.pread(fd, min(extent, MAX_RECORD_SIZE), offset - seg.base)
        field = damaged_field(raw, offset)
        return Damage(offset, seg.path, field, reason, following)

    def next_valid_record(self, after: int) -> int | None:
        """Where the first intact record after ``after`` starts, found by scanning, never by trusting a size.

        A candidate must carry its own position in its commit-log-offset field and
        pass its CRC, so bytes inside a body are not mistaken for a record.
        """
        segments = self._segments  # one layout, as in _scan
        idx = max(bisect.bisect_right(segments, after, key=_base_of) - 1, 0)
        magic = bytes([MAGIC])
        for seg in segments[idx:]:
            pos = max(after + 1, seg.base)
            while pos < seg.end:
                n = min(SCAN_CHUNK, seg.end - pos)
                with self._reading(seg) as fd:
                    buf = os.pread(fd, n + HEADER_SIZE, pos - seg.base)
                i = buf.find(magic, MAGIC_AT)
                while 0 <= i - MAGIC_AT < n:
                    cand = i - MAGIC_AT
                    if claims_offset(buf, cand, pos + cand) and self._intact(seg, pos + cand, peek_size(buf, cand)):
                        return pos + cand
                    i = buf.find(magic, i + 1)
                pos += n
        return None

    def _intact(self, seg: Segment, offset: int, size: int) -> bool:
        if not HEADER_SIZE <= size <= min(MAX_RECORD_SIZE, seg.end - offset):
            return False
        try:
            with self._reading(seg) as fd:
                decode(os.pread(fd, size, offset - seg.base))
        except RecordError:
            return False
        return True

    def _truncate(self, offset: int) -> None:
        with self._lock:
            while len(self._segments) > 1 and self._segments[-1].base >= offset and self._segments[-1].base > 0:
                seg = self._segments.pop()
                self._bases.pop()
                if seg.fd is not None:
                    os.close(seg.fd)
                self._handles.forget(seg.path)
                seg.path.unlink()
            seg = self._segments[-1]
            fd = _writer_fd(seg)
            os.ftruncate(fd, offset - seg.base)
            os.fsync(fd)
            seg.size = seg.flushed = offset - seg.base
            fsync_dir(self.directory)

    def close(self) -> None:
        with self._lock:
            for seg in self._segments:
                if seg.fd is None:
                    continue  # sealed and fsynced
                try:
                    os.fsync(seg.fd)
                except OSError as exc:  # a failing disk: close the rest anyway; recovery checks the log
                    log.error("fsync of segment %s failed at close: %s", seg.path.name, exc)
                finally:
                    os.close(seg.fd)
                    seg.fd = None
            self._segments.clear()
            self._bases.clear()
            self._handles.close()


class _InvalidAt(Exception):
    def __init__(self, offset: int, reason: str) -> None:
        super().__init__(f"{offset}: {reason}")
        self.offset = offset
        self.reason = reason


def _writer_fd(seg: Segment) -> int:
    """The writer's descriptor of ``seg``, opened again if it was closed (a tail cut back into a sealed segment)."""
    if seg.fd is None:
        seg.fd = os.open(seg.path, os.O_RDWR)
    return seg.fd


@contextmanager
def _read_through(handles: FileHandles, seg: Segment) -> Iterator[int]:
    """``handles.use`` of the segment; a segment retention deleted since it was looked up is a KeyError (as a read
    below the log start is), not an OSError of a missing file."""
    with ExitStack() as stack:
        try:
            fd = stack.enter_context(handles.use(seg.path))
        except FileNotFoundError:
            raise KeyError(seg.base) from None
        yield fd


def _base_of(seg: Segment) -> int:
    return seg.base


