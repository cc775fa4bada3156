"""Retention's I/O: read the segments and the pins, ask the decision (retention.py), move the log start; first the
topics' own limits move their queues' earliest retained offsets (topic_retention.py).

The broker's loop (runtime/services.py) calls ``run_once`` every ``retention_check_interval`` seconds on a thread;
only the node that writes (the one broker, a set's leader) runs it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping

from .message_store import MessageStore
from .retention import Pin, RetentionLimits, new_log_start
from .topic_retention import TopicRetention

log = logging.getLogger(__name__)


class RetentionService:
    """Deletes what the limits let go and no pin holds; ``pins`` by name (for the log line saying what held)."""

    def __init__(self, store: MessageStore, limits: RetentionLimits, pins: Mapping[str, Pin],
                 clock: Callable[[], float] = time.time, reclaim: Callable[[], int] = lambda: 0,
                 topics: TopicRetention | None = None) -> None:
        self._store = store
        self._limits = limits
        self._pins = dict(pins)
        self._clock = clock
        self._reclaim = reclaim  # bytes a disk past its early-delete watermark wants freed (DiskWatch.reclaim_bytes)
        # the topics' own retention_ms / retention_bytes: the runtime's, which set the floors once as the store opened
        self.topics = topics if topics is not None else TopicRetention(store, limits.age_ms)
        self.deleted_files = 0  # every file retention deleted since start (/metrics)
        self.early_deleted_files = 0  # of which deleted before their time, for the disk (/metrics)

    def held(self) -> dict[str, int | None]:
        """Each pin's lowest needed commit-log offset now."""
        return {name: pin() for name, pin in self._pins.items()}

    def run_once(self) -> int:
        """One pass: read the pins, delete what may go; return the log start after it."""
        return self.apply(self.held())

    def apply(self, pins: Mapping[str, int | None]) -> int:
        """Delete what the limits let go and ``pins`` (read just before) do not hold; return the log start after it."""
        store = self._store
        now_ms = int(self._clock() * 1000)
        kept = self.topics.apply(now_ms)  # first: a topic's queues move to their earliest retained offsets
        segments = store.commit_log.segment_facts()
        start = new_log_start(segments, self._limits, pins.values(), now_ms, kept=kept)
        reclaim = self._reclaim()
        early = new_log_start(segments, self._limits, pins.values(), now_ms, reclaim, kept) if reclaim else start
        if early > store.log_start.offset:
            deleted = store.log_start.advance(early)
            self.deleted_files += len(deleted)
            if early > start:
                self.early_deleted_files += len(deleted)
            log.info("retention: the log starts at %d now; %d files deleted%s (pins: %s)", early, len(deleted),
                     f", early for a disk past its watermark ({reclaim} bytes over)" if early > start else "",
                     ", ".join(f"{name}={offset}" for name, offset in pins.items() if offset is not None) or "none")
        return store.log_start.offset
