"""Sorted runs of (due ms, queue offset) pairs on disk: immutable files, written whole or not at all.

The store's part of the timer index (docs/message-types-plan.md T2): a run is written once (temp file, fsync,
rename, directory fsync: ``atomic_file.write_whole``) and then only read, 64 KiB at a time, through a cursor
whose position the index keeps. No domain here: a run knows pairs of integers, not what they mean.
"""

from __future__ import annotations

import heapq
import os
import struct
from collections.abc import Iterable, Iterator
from pathlib import Path

from .atomic_file import write_whole

PAIR = struct.Struct("<qq")  # due ms, queue offset
CHUNK = 4096  # pairs a cursor reads at once (64 KiB)


def write_run(path: Path, pairs: Iterable[tuple[int, int]]) -> None:
    """Write sorted ``pairs`` as the run at ``path``: whole, or absent after a crash (streamed, 64 KiB at a time)."""
    write_whole(path, _chunks(pairs))


def _chunks(pairs: Iterable[tuple[int, int]]) -> Iterator[bytes]:
    buf = bytearray()
    for due, offset in pairs:
        buf += PAIR.pack(due, offset)
        if len(buf) >= CHUNK * PAIR.size:
            yield bytes(buf)
            buf.clear()
    if buf:
        yield bytes(buf)


class RunCursor:
    """One run from ``position`` on; only the chunk around the position is in memory, as bytes."""

    def __init__(self, path: Path, position: int = 0) -> None:
        self.path = path
        self.count = path.stat().st_size // PAIR.size
        self.position = position
        self._loaded: tuple[int, bytes] = (0, b"")  # (first index, bytes): one attribute, so a reader never sees half a swap

    @property
    def remaining(self) -> int:
        return self.count - self.position

    def at(self, index: int) -> tuple[int, int]:
        """The pair at ``index`` (position <= index < count)."""
        start, chunk = self._loaded
        if not start <= index < start + len(chunk) // PAIR.size:
            with open(self.path, "rb") as fh:
                start, chunk = index, os.pread(fh.fileno(), CHUNK * PAIR.size, index * PAIR.size)
            self._loaded = (start, chunk)
        return PAIR.unpack_from(chunk, (index - start) * PAIR.size)  # type: ignore[return-value]

    def head(self) -> tuple[int, int] | None:
        return self.at(self.position) if self.position < self.count else None

    def pairs(self, start: int | None = None) -> Iterator[tuple[int, int]]:
        """Every pair from ``start`` (the position by default) to the end, in order."""
        for index in range(self.position if start is None else start, self.count):
            yield self.at(index)


def merge(cursors: Iterable[RunCursor]) -> Iterator[tuple[int, int]]:
    """The remaining pairs of several runs in one sorted stream (by due time, then offset)."""
    return heapq.merge(*(cursor.pairs() for cursor in cursors))
