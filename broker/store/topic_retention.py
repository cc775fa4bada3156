"""A topic's own retention (``retention_ms``, ``retention_bytes``): each queue's earliest retained offset, and what its
messages hold of the shared log.

One commit log holds every topic, so a topic's limits cannot delete bytes of their own: a limit shorter than the
broker's moves the topic's queues' earliest retained offset (``TopicWrites.retain_from``: every front reads from there,
a group below it continues from it and counts the skip), and the bytes go with their segments; a limit longer than the
broker's keeps the segments that hold the messages still within it (``keeps``, which ``new_log_start`` honours like a
pin, except for a disk past its watermark). The decisions are retention.py's pure functions; this reads the queues.
docs/decisions/052-retention-by-whole-segments-and-pins.md, "Per-topic limits", says why.
"""

from __future__ import annotations

import functools

from .consume_queues import QueueKey
from .message_store import MessageStore
from .retention import ByteWindow, first_at_or_after, grown, retained_start, trimmed

CHUNK = 4096  # consume-queue entries read at a time while counting a queue's bytes


class TopicRetention:
    """Applies the topics' own limits on each retention pass (on the pass's thread); ``broker_age_ms``: the broker's
    retention, which a topic that sets only ``retention_bytes`` keeps by age (None: no age limit)."""

    def __init__(self, store: MessageStore, broker_age_ms: int | None) -> None:
        self._store = store
        self._broker_age_ms = broker_age_ms
        self._windows: dict[QueueKey, ByteWindow] = {}  # each queue's bytes window, kept so a pass reads only news

    def apply(self, now_ms: int) -> list[int]:
        """Move each queue of a topic with its own limits to its earliest retained offset; return the commit-log
        offsets of the first messages they keep (what ``new_log_start`` must not take but for the disk)."""
        keeps: list[int] = []
        counted: set[QueueKey] = set()
        for cfg in self._store.topics.all():
            if not cfg.own_retention:
                continue
            age_ms = cfg.retention_ms if cfg.retention_ms is not None else self._broker_age_ms
            for qid in range(cfg.queues):
                first, end = self._store.reads.queue_range(cfg.name, qid)
                age_start = None if age_ms is None else first_at_or_after(
                    first, end, functools.partial(self._stored_ms, cfg.name, qid), now_ms - age_ms)
                window = None
                if cfg.retention_bytes is not None:
                    window = self._bytes_window((cfg.name, qid), first, end, cfg.retention_bytes)
                    counted.add((cfg.name, qid))
                start = retained_start(first, end, age_start, window)
                if start > first:
                    self._store.topic_writes.retain_from(cfg.name, qid, start)
                if start < end:
                    at = self._store.reads.commit_log_offset_at(cfg.name, qid, start)
                    if at is not None:
                        keeps.append(at)
        for key in self._windows.keys() - counted:  # a topic deleted, or its bytes limit lifted
            del self._windows[key]
        return keeps

    def _stored_ms(self, topic: str, queue_id: int, offset: int) -> int | None:
        msg = self._store.reads.get(topic, queue_id, offset)
        return None if msg is None else msg.store_timestamp

    def _bytes_window(self, key: QueueKey, first: int, end: int, max_bytes: int) -> ByteWindow:
        """The queue's newest entries within ``max_bytes``: the entries written since the last pass counted, the
        oldest let go while it holds more."""
        window = self._windows.get(key, ByteWindow(first, first, 0))
        if window.end > end:  # the queue's tail was cut (a set's divergent tail): count again
            window = ByteWindow(first, first, 0)
        window = grown(window, first, [])
        while window.end < end:
            sizes = self._store.reads.entry_sizes(*key, window.end, min(CHUNK, end - window.end))
            if not sizes:
                break
            window = grown(window, first, sizes)
        while window.held > max_bytes and window.start + 1 < window.end:
            sizes = self._store.reads.entry_sizes(*key, window.start, min(CHUNK, window.end - window.start))
            if not sizes:
                break
            window = trimmed(window, sizes, max_bytes)
        self._windows[key] = window
        return window
