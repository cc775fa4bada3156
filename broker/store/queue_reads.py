"""Reading the store: by queue offset, by time, by commit-log offset; damage is reported, never raised mid-read.

The reads need no lock (the consume queues and the log are append-only for readers), so they live apart from the
single writer's code. They see the whole log: the store's own readers (the half log, the producer-transaction
replay, the timer index) read here, a consumer's reads go through ``VisibleReads`` (visible_reads.py) over these.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from .commit_log import CommitLog
from .consume_queues import ConsumeQueues
from .damaged_records import DamagedEntry, DamagedRecordError, DamagedRecords
from .record import RecordError, StoredMessage

if TYPE_CHECKING:
    from .consume_queue import QueueEntry


class QueueReads:
    def __init__(self, commit_log: CommitLog, queues: ConsumeQueues, damaged: DamagedRecords) -> None:
        self._log = commit_log
        self._queues = queues
        self._damaged = damaged  # every read that meets damage notes it there (the store's count, for /metrics)

    def floors_of(self, topic: str) -> dict[int, int]:
        """Each queue's floor of ``topic``: where a deleted topic of its name ended (the state snapshot keeps them)."""
        return self._queues.floors_of(topic)

    def queue_range(self, topic: str, queue_id: int) -> tuple[int, int]:
        """(min offset, one past the last message) of a queue; (0, 0) for one never written."""
        return self._queues.range(topic, queue_id)

    def commit_log_offset_at(self, topic: str, queue_id: int, queue_offset: int) -> int | None:
        """Where the record at ``queue_offset`` of a queue is in the log, from its consume-queue entry (no record read);
        None when the queue holds no such entry."""
        cq = self._queues.find(topic, queue_id)
        entry = cq.get(queue_offset) if cq is not None else None
        return entry.commit_log_offset if entry is not None else None

    def queue_codes(self, topic: str, queue_id: int, offset: int, count: int) -> list[int]:
        """Up to ``count`` consume-queue codes (``record.queue_code``) from ``offset``, fewer at a file boundary:
        how the timer index reads due times, with no commit-log read."""
        cq = self._queues.find(topic, queue_id)
        return [] if cq is None else cq.codes(offset, count)

    def read_queue(self, topic: str, queue_id: int, offset: int, max_messages: int) -> list[StoredMessage]:
        """The intact messages among the next ``max_messages`` entries (damaged ones reported and left out)."""
        return [e for e in self.read_entries(topic, queue_id, offset, max_messages) if type(e) is StoredMessage]

    def read_entries(self, topic: str, queue_id: int, offset: int, max_messages: int) -> list[StoredMessage | DamagedEntry]:
        """Up to ``max_messages`` entries from ``offset``: each its message, or a DamagedEntry in its place."""
        cq = self._queues.find(topic, queue_id)
        if cq is None:
            return []
        out: list[StoredMessage | DamagedEntry] = []
        offset = max(offset, cq.min_offset, self._queues.floor(topic, queue_id))
        while len(out) < max_messages:
            entries = cq.get_range(offset, max_messages - len(out))
            if not entries:
                break
            for i, entry in enumerate(entries):
                out.append(self._read_entry(topic, queue_id, offset + i, entry))
            offset += len(entries)
        return out

    def queue_end_within(self, topic: str, queue_id: int, start: int, commit_log_offset: int) -> int:
        """From queue offset ``start`` on, one past the last message that ends at or before ``commit_log_offset``."""
        cq = self._queues.find(topic, queue_id)
        if cq is None:
            return start
        offset = max(start, cq.min_offset)
        while True:
            entries = cq.get_range(offset, 256)
            if not entries:
                return offset
            for entry in entries:
                if entry.commit_log_offset + entry.size > commit_log_offset:
                    return offset
                offset += 1

    def _read_entry(self, topic: str, queue_id: int, queue_offset: int, entry: QueueEntry) -> StoredMessage | DamagedEntry:
        try:
            msg = self._log.read_record(entry.commit_log_offset, entry.size)
        except (RecordError, KeyError, ValueError, OSError) as exc:  # KeyError/ValueError: an entry pointing nowhere
            reason = str(exc) or type(exc).__name__
        else:
            if msg.queue_offset == queue_offset and msg.queue_id == queue_id and msg.topic == topic:
                return msg
            reason = f"its consume-queue entry points at {msg.topic}/{msg.queue_id}@{msg.queue_offset}"
        self._damaged.note(entry.commit_log_offset, reason, f"{topic}/{queue_id}@{queue_offset}")
        return DamagedEntry(topic, queue_id, queue_offset, entry.commit_log_offset, reason)

    def get(self, topic: str, queue_id: int, queue_offset: int) -> StoredMessage | None:
        found = self.read_queue(topic, queue_id, queue_offset, 1)
        return found[0] if found and found[0].queue_offset == queue_offset else None

    def offset_for_time(self, topic: str, queue_id: int, timestamp_ms: int) -> int:
        """First queue offset stored at or after ``timestamp_ms`` (Kafka's offsetsForTimes), by bisection."""
        lo, hi = self.queue_range(topic, queue_id)
        while lo < hi:
            mid = (lo + hi) // 2
            msg = self.get(topic, queue_id, mid)
            if msg is not None and msg.store_timestamp < timestamp_ms:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def read_at(self, commit_log_offset: int) -> StoredMessage:
        """The record at ``commit_log_offset``; DamagedRecordError (reported) when it is not intact."""
        try:
            return self._log.read_record(commit_log_offset)
        except (RecordError, KeyError, ValueError, OSError) as exc:
            reason = str(exc) or type(exc).__name__
        self._damaged.note(commit_log_offset, reason, "read by commit-log offset")
        raise DamagedRecordError(commit_log_offset, reason)

    def entry_sizes(self, topic: str, queue_id: int, offset: int, count: int) -> list[int]:
        """The record sizes of up to ``count`` entries from ``offset``, fewer at a file boundary, from the consume queue
        alone (a topic's ``retention_bytes`` counts them: topic_retention.py)."""
        cq = self._queues.find(topic, queue_id)
        if cq is None or offset < cq.min_offset:
            return []
        return cq.sizes(offset, count)

    def tag_hashes(self, topic: str, queue_id: int, offset: int, count: int) -> list[int]:
        """The tag hashes of up to ``count`` entries from ``offset``, from the consume queue alone (no record read)."""
        cq = self._queues.find(topic, queue_id)
        if cq is None or offset < cq.min_offset:
            return []
        return [entry.tag_hash for entry in cq.get_range(offset, count)]

    def intact_records(self, topic: str, queue_id: int, start: int, batch: int = 512) -> Iterator[StoredMessage]:
        """Every intact record of a queue from ``start``, in order; damaged ones are reported and passed over.

        How recovery reads the broker's own system queues (half/op logs, producer-transaction state) back.
        """
        offset = start
        while True:
            chunk = self.read_entries(topic, queue_id, offset, batch)
            if not chunk:
                return
            yield from (m for m in chunk if type(m) is not DamagedEntry)
            offset = chunk[-1].queue_offset + 1
