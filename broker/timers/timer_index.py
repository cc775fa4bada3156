"""The pending timers, as a function of the log: RMQ_SYS_WHEEL_TIMER's queue 0 (timers) minus queue 1 (releases).

A store listener: a timer's consume-queue entry carries its due time (``record.queue_code``), so adding one reads
no record; a release marker lists the timer queue offsets it released. Built the same way at start, live on a
leader, and on a follower from its replicated appends, so every node's index agrees with the log.

New timers go to an in-memory buffer (a heap of ints, ``due << 40 | offset``). On the store's checkpoint thread
the buffer becomes an immutable sorted run on disk (``store.timer_runs``) once it holds ``run_entries`` timers or
is ``run_age`` seconds old, ``fan_in`` runs of a similar size are merged into one (size-tiered: one merge per
checkpoint, released timers left out, ``store.timer_runs.compaction``), and ``timers/state.json``
records the runs with their cursors, how far queues 0 and 1 were read, and the released timers the runs and the
buffer still hold. A start reads that state and only the queues' tails past it: never every pending timer.
"""

from __future__ import annotations

import bisect
import heapq
import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from itertools import islice
from pathlib import Path

from halfmq.broker.store.atomic_file import DamagedFile, read_json, write_json
from halfmq.broker.store.damaged_records import DamagedEntry
from halfmq.broker.store.failure_watch import FailureWatch
from halfmq.broker.store.message_store import MessageStore
from halfmq.broker.store.timer_runs import RunCursor, compaction, merge, write_run
from halfmq.broker.store.topics import RELEASE_QUEUE, TIMER_QUEUE, TIMER_TOPIC

log = logging.getLogger(__name__)

READ_BATCH = 65_536
RUN_ENTRIES = 65_536
RUN_AGE = 60.0
FAN_IN = 8  # runs of one size tier merged at once
Timer = tuple[int, int]  # (due ms, timer queue offset): ordered by due time, then by send order
OFFSET_BITS = 40  # a buffer key is due << 40 | offset: one int per buffered timer, ordered as its Timer
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


def _run_holds(run: RunCursor, timer: Timer) -> bool:
    """Whether ``timer`` is in ``run`` at or past its cursor (a run is sorted by due time, then offset)."""
    index = bisect.bisect_left(range(run.position, run.count), timer, key=run.at)
    return index < run.remaining and run.at(run.position + index) == timer


class TimerIndex:
    """Timers not yet released, smallest due time first; ``on_sooner`` is called when a timer earlier than every
    pending one arrives (the release service sleeps until the earliest)."""

    def __init__(self, store: MessageStore, *, run_entries: int = RUN_ENTRIES, run_age: float = RUN_AGE,
                 fan_in: int = FAN_IN, clock: Callable[[], float] = time.monotonic) -> None:
        self._store = store
        self._dir = Path(store.config.data_dir) / "timers"
        self._dir.mkdir(exist_ok=True)
        self._run_entries, self._run_age, self._fan_in, self._clock = run_entries, run_age, fan_in, clock
        self._writes = FailureWatch("the timer index cannot write its runs and state: %s; retried at each checkpoint "
                                    "(pending timers stay in memory meanwhile)", "the timer index writes its runs and state again", log)
        self._lock = threading.Lock()  # a follower's appends call the listener from the replication thread
        self._maintaining = threading.Lock()  # one run write or merge at a time
        self._buffer: list[int] = []  # keys of timers at or past ``_runs_upto``
        self._buffered_since: float | None = None
        self._runs: list[RunCursor] = []
        self._run_lows: dict[Path, int] = {}  # each run's lowest timer queue offset, once found (retention's pin)
        self._runs_upto = 0  # the runs hold every timer queue offset below this (released ones left out)
        self._released: set[int] = set()  # released offsets the buffer or a run still holds past its cursor
        self._buffer_released: set[int] = set()  # every released offset at or past ``_runs_upto`` (for state.json)
        self._recording: list[int] | None = None  # releases seen while a run is written outside the lock
        self._timers_read = 0
        self._markers_read = 0
        self.reads = 0  # consume-queue entries and markers read (a start's cost)
        self.on_sooner: Callable[[], None] = lambda: None
        self._load_state()
        store.add_listener(self._appended)
        with self._lock:  # markers first: at start a released timer is never buffered at all
            self._read_markers()
            self._read_timers()
        store.add_checkpoint_hook(self.checkpoint)

    # --- the decision (pure: reads the index, changes nothing it answers) ---------------------------------------
    def due(self, now_ms: int, limit: int) -> list[Timer]:
        """The earliest pending timers due at or before ``now_ms``, at most ``limit``, in due order. Never early:
        a timer due at ``now_ms + 1`` is not among them."""
        with self._lock:
            heap, after, released = self._buffer, _key(now_ms + 1, 0), self._released
            keys: list[int] = []
            while heap and heap[0] < after and len(keys) < limit:
                key = heapq.heappop(heap)
                if key & OFFSET_MASK in released:
                    released.discard(key & OFFSET_MASK)  # released already: gone from the buffer for good
                else:
                    keys.append(key)
            for key in keys:
                heapq.heappush(heap, key)
            found = [_timer(key) for key in keys]
            for run in self._runs:
                taken = 0
                for due, offset in run.pairs():
                    if due > now_ms or taken >= limit:
                        break
                    if offset not in released:
                        found.append((due, offset))
                        taken += 1
            return sorted(found)[:limit]

    def next_due(self) -> int | None:
        """The earliest pending timer's due time (ms), None when nothing is pending."""
        with self._lock:
            self._drop_released_heads()
            heads = [self._buffer[0] >> OFFSET_BITS] if self._buffer else []
            heads += [head[0] for run in self._runs if (head := run.head()) is not None]
            return min(heads, default=None)

    def lowest_needed_offset(self) -> int | None:
        """Retention's pin (store.retention): the commit-log offset of the pending timer earliest in the timer queue
        (a timer not yet released must still be delivered). A run's lowest offset is found once and kept: a run never
        gains timers, so it only errs towards keeping more. None when no timer is pending."""
        with self._lock:
            released = self._released
            lows = [key & OFFSET_MASK for key in self._buffer if key & OFFSET_MASK not in released]
            for run in self._runs:
                if run.remaining:
                    low = self._run_lows.get(run.path)
                    if low is None:
                        low = self._run_lows[run.path] = min(offset for _, offset in run.pairs())
                    lows.append(low)
            self._run_lows = {run.path: self._run_lows[run.path] for run in self._runs if run.path in self._run_lows}
        lowest = min(lows, default=None)
        if lowest is None:
            return None
        found = self._store.reads.commit_log_offset_at(TIMER_TOPIC, TIMER_QUEUE, lowest)
        return 0 if found is None else found  # its entry unread: hold everything rather than guess

    def holds(self, due_ms: int, offset: int) -> bool:
        """Whether the timer (``due_ms``, ``offset``) is still pending (a recall's question). The buffer is searched
        as a list (at most ``run_entries`` long), each run by bisection from its cursor: no run is read whole."""
        with self._lock:
            if offset in self._released or offset >= self._timers_read:
                return False
            if _key(due_ms, offset) in self._buffer:
                return True
            return any(_run_holds(run, (due_ms, offset)) for run in self._runs)

    @property
    def pending(self) -> int:
        with self._lock:
            return max(0, len(self._buffer) + sum(run.remaining for run in self._runs) - len(self._released))

    # --- following the log ------------------------------------------------------------------------------------
    def _appended(self, topic: str, queue_id: int) -> None:
        if topic != TIMER_TOPIC:
            return
        with self._lock:
            before = self._buffer[0] if self._buffer else None
            if queue_id == TIMER_QUEUE:
                self._read_timers()
            elif queue_id == RELEASE_QUEUE:
                self._read_markers()
            sooner = bool(self._buffer) and (before is None or self._buffer[0] < before)
        if sooner:
            self.on_sooner()

    def _read_timers(self) -> None:
        heap, released = self._buffer, self._released
        bulk = not heap  # at start: append everything, then one heapify
        self._timers_read = max(self._timers_read, self._store.reads.queue_range(TIMER_TOPIC, TIMER_QUEUE)[0])  # past retention's
        while dues := self._store.reads.queue_codes(TIMER_TOPIC, TIMER_QUEUE, self._timers_read, READ_BATCH):
            self.reads += len(dues)
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
        if heap and self._buffered_since is None:
            self._buffered_since = self._clock()

    def _read_markers(self) -> None:
        self._markers_read = max(self._markers_read, self._store.reads.queue_range(TIMER_TOPIC, RELEASE_QUEUE)[0])  # past retention's
        while markers := self._store.reads.read_entries(TIMER_TOPIC, RELEASE_QUEUE, self._markers_read, READ_BATCH):
            self.reads += len(markers)
            for marker in markers:
                if type(marker) is not DamagedEntry:
                    offsets = decode_marker(marker.body)
                    self._released.update(offsets)
                    self._buffer_released.update(o for o in offsets if o >= self._runs_upto)
                    if self._recording is not None:
                        self._recording.extend(offsets)
            self._markers_read += len(markers)
        self._drop_released_heads()

    def _drop_released_heads(self) -> None:
        heap, released = self._buffer, self._released
        while heap and heap[0] & OFFSET_MASK in released:
            released.discard(heapq.heappop(heap) & OFFSET_MASK)
        for run in self._runs:
            while (head := run.head()) is not None and head[1] in released:
                released.discard(head[1])
                run.position += 1

    # --- on disk (the store's checkpoint thread) --------------------------------------------------------------
    def checkpoint(self) -> None:
        """Write the buffer as a run when it is full or old, merge one tier of ``fan_in`` similar runs if one is
        full, then record the state. A disk that refuses is said once (not a traceback a second) and tried again."""
        try:
            self._maintain()
        except OSError as refused:
            self._writes.failed(refused)
            return
        self._writes.succeeded()

    def _maintain(self) -> None:
        with self._maintaining:
            with self._lock:
                full = len(self._buffer) >= self._run_entries or (
                    self._buffered_since is not None and self._clock() - self._buffered_since >= self._run_age)
            if full:
                self._write_buffer_run()
            with self._lock:
                chosen = [self._runs[i] for i in compaction([run.remaining for run in self._runs], self._run_entries, self._fan_in)]
            if chosen:
                self._merge_runs(chosen)
            self._write_state()

    def _write_buffer_run(self) -> None:
        """The buffer's timers below ``_timers_read`` become a run. Lean on purpose: the buffer's own ints, sorted
        as they are and unpacked 4,096 at a time, so a run of 65,536 adds no tuple or set per timer to the heap."""
        with self._lock:
            since, upto, released = self._runs_upto, self._timers_read, self._released
            keys = sorted(key for key in self._buffer if key & OFFSET_MASK not in released)
            left_out = {key & OFFSET_MASK for key in self._buffer if key & OFFSET_MASK in released}
            self._recording = []
        path = self._dir / f"run-{uuid.uuid4().hex}"
        try:
            write_run(path, map(_timer, keys))
        except OSError:
            with self._lock:
                self._recording = None
            raise
        del keys
        cursor = RunCursor(path)
        with self._lock:
            self._buffer = [key for key in self._buffer if key & OFFSET_MASK >= upto]
            heapq.heapify(self._buffer)
            self._released -= left_out
            assert self._recording is not None
            # released while writing, and in the run: every buffered timer from ``since`` to ``upto`` not left out
            self._released.update(offset for offset in self._recording if since <= offset < upto and offset not in left_out)
            self._recording = None
            self._runs.append(cursor)
            self._runs_upto = upto
            self._buffer_released = {offset for offset in self._buffer_released if offset >= upto}
            self._buffered_since = self._clock() if self._buffer else None
            self._drop_released_heads()

    def _merge_runs(self, olds: list[RunCursor]) -> None:
        """Merge ``olds`` into one run from their cursors on (what was released in due order is behind a cursor),
        leaving out the timers released out of order; the other runs and the buffer are not touched."""
        with self._lock:
            positions = [run.position for run in olds]
            skipped = set(self._released)
        dropped: set[int] = set()

        def kept(pairs: Iterator[Timer]) -> Iterator[Timer]:
            for pair in pairs:
                if pair[1] in skipped:
                    dropped.add(pair[1])
                else:
                    yield pair

        path = self._dir / f"run-{uuid.uuid4().hex}"
        write_run(path, kept(merge([RunCursor(run.path, position) for run, position in zip(olds, positions, strict=True)])))
        cursor = RunCursor(path)
        with self._lock:
            self._runs = [run for run in self._runs if run not in olds] + [cursor]
            self._released -= dropped
            for run, position in zip(olds, positions, strict=True):  # released while merging: behind an old cursor,
                self._released.update(  # still in the new run
                    offset for _, offset in islice(run.pairs(position), run.position - position) if offset not in dropped)
            self._drop_released_heads()

    def _write_state(self) -> None:
        with self._lock:
            self._runs = [run for run in self._runs if run.remaining > 0]
            runs = [[run.path.name, run.position] for run in self._runs]
            state = {"runs": runs, "timers_upto": self._runs_upto,
                     "markers_upto": self._markers_read,
                     "released": sorted({o for o in self._released if o < self._runs_upto} | self._buffer_released)}
            end = self._store.commit_log.end_offset
        if self._store.flushed_offset < end and self._store.commit_log.flush() < end:
            return  # what the state says must be durable in the log first (an async-flush store: fsynced here)
        write_json(self._dir / "state.json", state)
        kept = {str(name) for name, _ in runs} | {"state.json"}
        for path in self._dir.iterdir():
            if path.name not in kept:
                path.unlink(missing_ok=True)

    def _load_state(self) -> None:
        try:
            state = read_json(self._dir / "state.json", None)
        except DamagedFile as exc:
            log.warning("%s; rebuilding the timer index from the log", exc)
            state = None
        if state is None:
            return
        timers_end = self._store.reads.queue_range(TIMER_TOPIC, TIMER_QUEUE)[1]
        markers_end = self._store.reads.queue_range(TIMER_TOPIC, RELEASE_QUEUE)[1]
        runs = [self._dir / name for name, _ in state["runs"]]
        if state["timers_upto"] > timers_end or state["markers_upto"] > markers_end or not all(p.exists() for p in runs):
            log.warning("timers/state.json is ahead of the log or names a missing run; rebuilding the timer index from the log")
            return
        self._runs = [RunCursor(path, position) for path, (_, position) in zip(runs, state["runs"], strict=True)]
        self._runs_upto = self._timers_read = state["timers_upto"]
        self._markers_read = state["markers_upto"]
        released = set(state["released"])
        self._buffer_released = {offset for offset in released if offset >= self._runs_upto}
        self._released = released
