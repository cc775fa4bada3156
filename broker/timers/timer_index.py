"""The pending timers, as a function of the log: RMQ_SYS_WHEEL_TIMER's queue 0 (timers) minus queue 1 (releases).

A store listener: a timer's consume-queue entry carries its due time (``record.queue_code``), so adding one reads
no record; a release marker lists the timer queue offsets it released. Built the same way at start (from the
log), live on a leader, and on a follower from its replicated appends, so every node's index agrees with the log.
This first index holds the pending timers in memory, one int each (``due << 40 | offset``: ordered by due time,
then by send order; about 45 bytes a timer, measured); docs/message-types-plan.md T2 replaces it with sorted runs
on disk.
"""

from __future__ import annotations

import heapq
import threading
from collections.abc import Callable

from halfmq.broker.store.damaged_records import DamagedEntry
from halfmq.broker.store.message_store import MessageStore
from halfmq.broker.store.topics import RELEASE_QUEUE, TIMER_QUEUE, TIMER_TOPIC

READ_BATCH = 65_536
Timer = tuple[int, int]  # (due ms, timer queue offset): ordered by due time, then by send order
OFFSET_BITS = 40  # a key is due << 40 | offset: one int per pending timer, ordered as its Timer
OFFSET_MASK = (1 << OFFSET_BITS) - 1


def _key(due_ms: int, offset: int) -> int:
    return due_ms << OFFSET_BITS | offset


def _timer(key: int) -> Timer:
    return key >> OFFSET_BITS, key & OFFSET_MASK


def encode_marker(offsets: list[int]) -> bytes:
    """A release marker's body: the timer queue offsets its write group released."""
    return ",".join(map(str, offsets)).encode()


def decode_marker(body: bytes) -> list[int]:
    return [int(part) for part in body.split(b",") if part]


class TimerIndex:
    """Timers not yet released, smallest due time first; ``on_sooner`` is called when a timer earlier than every
    pending one arrives (the release service sleeps until the earliest)."""

    def __init__(self, store: MessageStore) -> None:
        self._store = store
        self._lock = threading.Lock()  # a follower's appends call the listener from the replication thread
        self._heap: list[int] = []  # keys (``_key``)
        self._released: set[int] = set()  # released offsets the heap still holds (dropped when they reach its top)
        self._timers_read = 0
        self._markers_read = 0
        self.on_sooner: Callable[[], None] = lambda: None
        store.add_listener(self._appended)
        with self._lock:  # markers first: at start a released timer is never pushed at all
            self._read_markers()
            self._read_timers()

    # --- the decision (pure: reads the index, changes nothing it answers) ---------------------------------------
    def due(self, now_ms: int, limit: int) -> list[Timer]:
        """The earliest pending timers due at or before ``now_ms``, at most ``limit``, in due order. Never early:
        a timer due at ``now_ms + 1`` is not among them."""
        with self._lock:
            heap, after = self._heap, _key(now_ms + 1, 0)
            keys: list[int] = []
            while heap and heap[0] < after and len(keys) < limit:
                key = heapq.heappop(heap)
                if key & OFFSET_MASK in self._released:
                    self._released.discard(key & OFFSET_MASK)
                else:
                    keys.append(key)
            for key in keys:
                heapq.heappush(heap, key)
            return [_timer(key) for key in keys]

    def next_due(self) -> int | None:
        """The earliest pending timer's due time (ms), None when nothing is pending."""
        with self._lock:
            self._drop_released_head()
            return self._heap[0] >> OFFSET_BITS if self._heap else None

    @property
    def pending(self) -> int:
        with self._lock:
            return max(0, len(self._heap) - len(self._released))

    # --- following the log ------------------------------------------------------------------------------------
    def _appended(self, topic: str, queue_id: int) -> None:
        if topic != TIMER_TOPIC:
            return
        with self._lock:
            before = self._heap[0] if self._heap else None
            if queue_id == TIMER_QUEUE:
                self._read_timers()
            elif queue_id == RELEASE_QUEUE:
                self._read_markers()
            sooner = bool(self._heap) and (before is None or self._heap[0] < before)
        if sooner:
            self.on_sooner()

    def _read_timers(self) -> None:
        heap, released = self._heap, self._released
        bulk = not heap  # at start: append everything, then one heapify
        while dues := self._store.queue_codes(TIMER_TOPIC, TIMER_QUEUE, self._timers_read, READ_BATCH):
            for offset, due in enumerate(dues, self._timers_read):
                if offset in released:
                    released.discard(offset)  # its marker came first (a follower's batch, or the start)
                elif bulk:
                    heap.append(due << OFFSET_BITS | offset)
                else:
                    heapq.heappush(heap, due << OFFSET_BITS | offset)
            self._timers_read += len(dues)
        if bulk:
            heapq.heapify(heap)

    def _read_markers(self) -> None:
        while markers := self._store.read_entries(TIMER_TOPIC, RELEASE_QUEUE, self._markers_read, READ_BATCH):
            for marker in markers:
                if type(marker) is not DamagedEntry:
                    self._released.update(decode_marker(marker.body))
            self._markers_read += len(markers)
        self._drop_released_head()

    def _drop_released_head(self) -> None:
        while self._heap and self._heap[0] & OFFSET_MASK in self._released:
            self._released.discard(heapq.heappop(self._heap) & OFFSET_MASK)
