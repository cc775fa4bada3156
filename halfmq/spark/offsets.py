"""Where a read starts and ends, and how it splits into Spark partitions: pure functions over queue offsets.

An offset map is ``{topic: {queue id: offset}}`` with string queue ids, because Spark checkpoints a stream's
offsets as JSON: each value is the next offset to read, so a micro-batch reads ``[start, end)`` per queue and
the next one starts where it ended. Only committed messages have queue offsets (a half message, a producer
transaction's messages before their commit and after an abort live elsewhere), so a range of offsets is exactly
what a read_committed consumer may see, and reading it again reads the same messages.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .options import Position, QueueOffsets, Start

Queue = tuple[str, int]  # (topic, queue id)
QueueRanges = dict[Queue, tuple[int, int]]  # (first retained offset, one past the last visible message)


@dataclass(frozen=True)
class QueueSlice:
    """One Spark partition: offsets ``[start, end)`` of one queue."""

    topic: str
    queue_id: int
    start: int
    end: int


def flat(offsets: QueueOffsets) -> dict[Queue, int]:
    return {(topic, int(q)): offset for topic, queues in offsets.items() for q, offset in queues.items()}


def nested(offsets: dict[Queue, int]) -> QueueOffsets:
    out: QueueOffsets = {}
    for (topic, q), offset in sorted(offsets.items()):
        out.setdefault(topic, {})[str(q)] = offset
    return out


def start_offsets(position: Position, ranges: QueueRanges, found_by_time: dict[Queue, int] | None = None) -> QueueOffsets:
    """Each queue's first offset to read. Given offsets are kept within the queue's range; a queue they do not name
    starts at its first message (a queue added later is read whole, as Kafka reads a new partition)."""
    if position.kind is Start.TIMESTAMP:
        assert found_by_time is not None, "a timestamp start needs each queue's offset found by time"
        return nested({q: found_by_time[q] for q in ranges})
    given = flat(position.offsets or {})
    out = {}
    for q, (lo, hi) in ranges.items():
        if position.kind is Start.LATEST:
            out[q] = hi
        elif position.kind is Start.OFFSETS and q in given:
            out[q] = min(max(given[q], lo), hi)
        else:
            out[q] = lo
    return nested(out)


def end_offsets(position: Position, ranges: QueueRanges) -> QueueOffsets:
    """Each queue's end for a batch read: its visible end, or a given offset no further than it."""
    given = flat(position.offsets or {}) if position.kind is Start.OFFSETS else {}
    return nested({q: min(given.get(q, hi), hi) for q, (_, hi) in ranges.items()})


def visible_ends(ranges: QueueRanges) -> QueueOffsets:
    """Each queue's end: where a stream's next micro-batch may read up to."""
    return nested({q: hi for q, (_, hi) in ranges.items()})


def admit(start: QueueOffsets, latest: QueueOffsets, limit: int | None) -> QueueOffsets:
    """The next micro-batch's end: ``latest`` (never behind ``start``), or at most ``limit`` offsets over all queues,
    shared out evenly so no queue waits behind a busy one. A queue new since ``start`` starts at 0."""
    begin, newest = flat(start), flat(latest)
    backlog = {q: max(0, newest[q] - begin.get(q, 0)) for q in newest}
    end = {q: max(begin.get(q, 0), newest[q]) for q in newest} | {q: o for q, o in begin.items() if q not in newest}
    if limit is None or sum(backlog.values()) <= limit:
        return nested(end)
    taken = dict.fromkeys(backlog, 0)
    waiting = sorted(q for q, n in backlog.items() if n)
    left = limit
    while left and waiting:
        share = max(1, left // len(waiting))
        for q in list(waiting):
            step = min(share, backlog[q] - taken[q], left)
            taken[q] += step
            left -= step
            if taken[q] == backlog[q]:
                waiting.remove(q)
            if not left:
                break
    return nested({q: begin.get(q, 0) + taken.get(q, 0) for q in end} | {q: o for q, o in begin.items() if q not in newest})


def plan(start: QueueOffsets, end: QueueOffsets, max_per_partition: int) -> list[QueueSlice]:
    """The partitions reading ``[start, end)`` of every queue, none longer than ``max_per_partition`` offsets."""
    begin = flat(start)
    slices = []
    for (topic, q), stop in sorted(flat(end).items()):
        offset = begin.get((topic, q), 0)
        while offset < stop:
            upto = min(stop, offset + max_per_partition)
            slices.append(QueueSlice(topic, q, offset, upto))
            offset = upto
    return slices


def first_offset_at(lo: int, hi: int, timestamp_ms: int, probe: Callable[[int], tuple[int, int] | None]) -> int:
    """The first offset of ``[lo, hi)`` whose message was stored at or after ``timestamp_ms`` (``hi`` when none is).

    ``probe(offset)`` answers the first message at or after ``offset`` as (its offset, its store time), or None;
    a queue's store times do not decrease (one writer appends them), so a bisection needs about log2(hi - lo) probes.
    The answer may be an offset without a message of its own (a damaged record's): a read from it starts at the next.
    """
    low, high = lo, hi
    while low < high:
        mid = (low + high) // 2
        found = probe(mid)
        if found is None or found[0] >= high:
            high = mid
        elif found[1] >= timestamp_ms:
            high = found[0]
        else:
            low = found[0] + 1
    return high
