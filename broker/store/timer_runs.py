"""Sorted runs of (due ms, queue offset) pairs on disk: immutable files, written whole or not at all.

The store's part of the timer index (docs/history/message-types-plan.md T2): a run is written once (temp file, fsync,
rename, directory fsync: ``atomic_file.write_whole``) and then only read, 64 KiB at a time, through a cursor
whose position the index keeps. No domain here: a run knows pairs of integers, not what they mean.

Compaction is size-tiered (``compaction``): a run's tier is how many times ``fan_in`` its remaining size is
above the run size, and ``fan_in`` runs of one tier merge into one run of the next. A pair is so rewritten about
log_fan_in(pending / run size) times in all, and one merge never reads more than ``fan_in`` similar runs: with
1,000,000 pending and 65,536-pair runs, the usual merge is 8 × 65,536 pairs, never the whole index.
"""

from __future__ import annotations

import heapq
import os
import struct
from collections.abc import Iterable, Iterator
from itertools import chain, islice
from pathlib import Path

from .atomic_file import write_whole

PAIR = struct.Struct("<qq")  # due ms, queue offset
CHUNK = 4096  # pairs a cursor reads at once (64 KiB)


def write_run(path: Path, pairs: Iterable[tuple[int, int]]) -> None:
    """Write sorted ``pairs`` as the run at ``path``: whole, or absent after a crash (streamed, 64 KiB at a time)."""
    write_whole(path, _chunks(pairs))


def _chunks(pairs: Iterable[tuple[int, int]]) -> Iterator[bytes]:
    pairs = iter(pairs)
    while batch := list(islice(pairs, CHUNK)):
        flat = list(chain.from_iterable(batch))
        yield struct.pack(f"<{len(flat)}q", *flat)


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


def stream(path: Path, start: int = 0) -> Iterator[tuple[int, int]]:
    """Every pair of the run at ``path`` from index ``start``, read 64 KiB at a time (for merges: no cache)."""
    with open(path, "rb") as fh:
        offset = start * PAIR.size
        while chunk := os.pread(fh.fileno(), CHUNK * PAIR.size, offset):
            offset += len(chunk)
            yield from PAIR.iter_unpack(chunk[:len(chunk) - len(chunk) % PAIR.size])  # type: ignore[misc]


def merge(cursors: Iterable[RunCursor]) -> Iterator[tuple[int, int]]:
    """The remaining pairs of several runs in one sorted stream (by due time, then offset)."""
    return heapq.merge(*(stream(cursor.path, cursor.position) for cursor in cursors))


def tier(size: int, run_size: int, fan_in: int) -> int:
    """0 below ``fan_in`` runs' worth of pairs, then one more for each further factor ``fan_in``."""
    level, bound = 0, run_size * fan_in
    while size >= bound:
        level, bound = level + 1, bound * fan_in
    return level


def compaction(sizes: list[int], run_size: int, fan_in: int) -> list[int]:
    """Which runs to merge now (indexes into ``sizes``, the runs' remaining pairs): ``fan_in`` runs of the lowest
    tier holding that many, the smallest of it first; [] when no tier does. Runs of other tiers are left alone."""
    tiers: dict[int, list[int]] = {}
    for index, size in enumerate(sizes):
        tiers.setdefault(tier(size, run_size, fan_in), []).append(index)
    for level in sorted(tiers):
        if len(members := tiers[level]) >= fan_in:
            return sorted(sorted(members, key=lambda i: (sizes[i], i))[:fan_in])
    return []
