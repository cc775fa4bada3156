"""Retention: which whole commit-log segments may go, as a pure function of the segments, the limits, the pins and now.

One commit log holds every topic, so a segment goes only when all of it is past the limit (Kafka deletes whole
segments past ``retention.ms``/``retention.bytes``; RocketMQ deletes commit-log files older than ``fileReservedTime``,
judged by the file's last write). What goes is always a prefix of the log: the log start only moves forward, and the
consume queues, the key index and the timer index follow it (``LogStart.advance``).

A *pin* is the lowest commit-log offset something still needs (an open half message, an open producer transaction, a
timer not yet released, the state records a restart reads), or None when it needs nothing: no segment that ends past a
pin goes, whatever its age. The decision is here, tested under a fake clock; ``RetentionService`` only does the I/O.
docs/decisions/052-retention-by-whole-segments-and-pins.md says why.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

log = logging.getLogger(__name__)

Pin = Callable[[], "int | None"]  # the lowest commit-log offset a part of the broker still needs (None: nothing)


@dataclass(frozen=True, slots=True)
class SegmentFacts:
    """What retention knows of one commit-log segment: where it starts and ends, and when it was last written (ms)."""

    base: int
    end: int
    last_write_ms: int

    @property
    def size(self) -> int:
        return self.end - self.base


@dataclass(frozen=True, slots=True)
class RetentionLimits:
    """How long (ms) and how many bytes the log keeps; None: no limit of that kind."""

    age_ms: int | None
    max_bytes: int | None


def lowest_pin(pins: Iterable[int | None]) -> int | None:
    """The lowest offset any pin holds (None when none holds anything)."""
    held = [pin for pin in pins if pin is not None]
    return min(held, default=None)


def new_log_start(segments: Sequence[SegmentFacts], limits: RetentionLimits, pins: Iterable[int | None], now_ms: int,
                  reclaim_bytes: int = 0, kept: Iterable[int | None] = ()) -> int:
    """Where the log starts once the segments past the limits go: the base of the first segment kept.

    ``segments`` in order, the last being the one written now (it never goes). A segment is past the limits when it
    was last written more than ``age_ms`` ago, or when the segments after it alone hold ``max_bytes`` or more, or
    while the segments going before it free less than ``reclaim_bytes`` (a disk past its early-delete watermark,
    disk_watermarks.py: the oldest go first, before their time); only a run of such segments from the start goes,
    and it stops at the first segment that ends past the lowest pin, whatever the disk. ``kept``: where the topics
    with their own limits still hold messages (``topic_keeps``): they stop the run like pins, except for a disk
    past its watermark, which takes their segments too.
    """
    if not segments:
        return 0
    pinned = lowest_pin(pins)
    held = lowest_pin(kept)
    after = sum(seg.size for seg in segments)
    start = segments[0].base
    freed = 0
    for seg in segments[:-1]:
        after -= seg.size
        too_old = limits.age_ms is not None and now_ms - seg.last_write_ms > limits.age_ms
        too_big = limits.max_bytes is not None and after >= limits.max_bytes
        disk_short = freed < reclaim_bytes
        if not (too_old or too_big or disk_short) or (pinned is not None and seg.end > pinned):
            break
        if held is not None and seg.end > held and not disk_short:
            break
        start = seg.end
        freed += seg.size
    return start


# --- a topic's own limits (retention_ms, retention_bytes): each queue's earliest retained offset -----------------------
@dataclass(frozen=True, slots=True)
class ByteWindow:
    """The newest entries of one queue a topic's ``retention_bytes`` keeps: ``[start, end)``, holding ``held`` bytes.
    Kept between passes, so a pass reads only the entries written since, and those it lets go."""

    start: int = 0
    end: int = 0
    held: int = 0


def grown(window: ByteWindow, first: int, sizes: Sequence[int]) -> ByteWindow:
    """``window`` with the entries written since counted (``sizes``: of the entries from ``window.end`` on). A window
    the queue's first offset passed (the log start moved past it) starts again at ``first``, empty: the caller counts
    from there."""
    if window.start < first:
        window = ByteWindow(first, first, 0)
    return ByteWindow(window.start, window.end + len(sizes), window.held + sum(sizes))


def trimmed(window: ByteWindow, sizes: Sequence[int], max_bytes: int) -> ByteWindow:
    """``window`` with its oldest entries let go (``sizes``: of the entries from ``window.start`` on) while it holds more
    than ``max_bytes``; the newest entry always stays (as Kafka keeps a partition's active segment)."""
    start, held = window.start, window.held
    for size in sizes:
        if held <= max_bytes or start + 1 >= window.end:
            break
        start, held = start + 1, held - size
    return ByteWindow(start, window.end, held)


def first_at_or_after(lo: int, hi: int, stored_ms: Callable[[int], int | None], cutoff_ms: int) -> int:
    """The first queue offset in ``[lo, hi)`` stored at or after ``cutoff_ms`` (``hi`` when none), by bisection: a
    queue's store times only grow. An offset whose time cannot be read (``None``: damaged) counts as older."""
    while lo < hi:
        mid = (lo + hi) // 2
        at = stored_ms(mid)
        if at is not None and at >= cutoff_ms:
            hi = mid
        else:
            lo = mid + 1
    return lo


def retained_start(first: int, end: int, age_start: int | None, window: ByteWindow | None) -> int:
    """A queue's earliest retained offset under its topic's own limits: past both the age's and the bytes' start, never
    before the queue's first offset nor past its end."""
    start = first
    if age_start is not None:
        start = max(start, age_start)
    if window is not None:
        start = max(start, window.start)
    return min(start, end)
