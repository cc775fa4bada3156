"""What consumers may read of the store: every queue up to one commit-log offset, the bound.

A single broker has no bound: everything written is visible, as it always was.
A broker set's node opens with one at 0 (BrokerRuntime.open). Its leader moves it
to its high watermark, the offset a majority has on disk
(broker/cluster/high_watermark.py); a follower moves it to the lower of the
leader's high watermark, as its fetches hear it, and its own durable end
(broker/cluster/follower.py), so a follower answering reads never shows what the
leader has not acknowledged. What a reader sees is on every node that may lead
next and no leader change can erase it. Every read made for a consumer or an operator goes through here: a
receive (HTTP or gRPC, through the delivery service), a read by offset, a
topic's offsets, a DLQ listing. The store's own reads (the transaction index,
recovery) see the whole log.

Long polls wait on ``add_listener``: told when a queue has new visible messages,
at once without a bound, when the bound passes them with one.
"""

from __future__ import annotations

from .commit_log import CommitLog
from .damaged_records import DamagedEntry
from .queue_reads import QueueReads
from .record import StoredMessage
from .store_types import Listener


class VisibleReads:
    def __init__(self, reads: QueueReads, commit_log: CommitLog, written: list[Listener]) -> None:
        """``written``: the store's listeners, told of each queue a write lands in (this joins them)."""
        self._reads = reads
        self._log = commit_log
        self.bound: int | None = None  # a commit-log offset; None: no bound
        self._listeners: list[Listener] = []
        self._ends: dict[tuple[str, int], int] = {}  # the visible end last found per queue (it only grows)
        self._hidden: dict[tuple[str, int], tuple[int, int]] = {}  # queue -> (end of its first, of its last) write past the bound
        written.append(self._written)

    # --- the bound --------------------------------------------------------------
    def limit(self, offset: int) -> None:
        """Show only records that end at or before ``offset`` from now on (a set's leader, before it serves)."""
        self.bound = offset if self.bound is None else max(self.bound, offset)

    def advance(self, offset: int) -> None:
        """Move the bound up to ``offset`` (never down) and wake whoever waits on a queue it reveals."""
        if self.bound is None or offset <= self.bound:
            return
        self.bound = offset
        revealed = [key for key, (first, _) in self._hidden.items() if first <= offset]
        for key in revealed:
            first, last = self._hidden.pop(key)
            if last > offset:  # more of it stays hidden: wake it again at the next advance
                self._hidden[key] = (offset + 1, last)
            for listener in self._listeners:
                listener(*key)

    def add_listener(self, listener: Listener) -> None:
        """Called with (topic, queue_id) when that queue has new messages a consumer may read."""
        self._listeners.append(listener)

    def _written(self, topic: str, queue_id: int) -> None:
        end = self._log.end_offset if self.bound is not None else 0  # the single writer's group ended here
        if self.bound is None or end <= self.bound:
            for listener in self._listeners:
                listener(topic, queue_id)
            return
        first, _ = self._hidden.get((topic, queue_id), (end, end))
        self._hidden[(topic, queue_id)] = (first, end)

    # --- reading ----------------------------------------------------------------
    def queue_range(self, topic: str, queue_id: int) -> tuple[int, int]:
        """(min offset, one past the last visible message) of a queue."""
        lo, hi = self._reads.queue_range(topic, queue_id)
        bound = self.bound
        if bound is None or bound >= self._log.end_offset:
            return lo, hi
        key = (topic, queue_id)
        start = min(max(self._ends.get(key, lo), lo), hi)
        end = self._reads.queue_end_within(topic, queue_id, start, bound)
        self._ends[key] = end
        return lo, end

    def offset_for_time(self, topic: str, queue_id: int, timestamp_ms: int) -> int:
        """The first visible queue offset stored at or after ``timestamp_ms`` (the end when none is)."""
        return min(self._reads.offset_for_time(topic, queue_id, timestamp_ms), self.queue_range(topic, queue_id)[1])

    def read_entries(self, topic: str, queue_id: int, offset: int, max_messages: int) -> list[StoredMessage | DamagedEntry]:
        """As QueueReads.read_entries, stopping at the bound."""
        if self.bound is not None:
            lo, hi = self.queue_range(topic, queue_id)
            max_messages = min(max_messages, hi - max(offset, lo))
            if max_messages <= 0:
                return []
        return self._reads.read_entries(topic, queue_id, offset, max_messages)

    def read_queue(self, topic: str, queue_id: int, offset: int, max_messages: int) -> list[StoredMessage]:
        return [e for e in self.read_entries(topic, queue_id, offset, max_messages) if type(e) is StoredMessage]

    def get(self, topic: str, queue_id: int, queue_offset: int) -> StoredMessage | None:
        found = self.read_queue(topic, queue_id, queue_offset, 1)
        return found[0] if found and found[0].queue_offset == queue_offset else None
