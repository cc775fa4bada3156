"""Damaged records met by reads behind the recovery checkpoint.

Recovery only validates the log past its checkpoint, so a record damaged on disk
later is found by the read that needs it. That read must cost one message, not
the topic: the entry is reported (logged once, counted) and handed back as a
``DamagedEntry`` in its place, so callers skip it and go on.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import final

from .record import RecordError

log = logging.getLogger(__name__)

MAX_REMEMBERED = 100_000  # distinct offsets logged once each; past that every read is logged and counted


@final  # readers tell it apart with `type(e) is DamagedEntry`, which mypy narrows only for a final class
@dataclass(frozen=True, slots=True)
class DamagedEntry:
    """A consume-queue entry whose record could not be read intact."""

    topic: str
    queue_id: int
    queue_offset: int
    commit_log_offset: int
    reason: str


class DamagedRecordError(RecordError):
    """A record a request needs is damaged."""

    def __init__(self, commit_log_offset: int, reason: str) -> None:
        super().__init__(f"the record at commit-log offset {commit_log_offset} is damaged ({reason})")
        self.commit_log_offset = commit_log_offset
        self.reason = reason


class DamagedRecords:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: set[int] = set()
        self.count = 0

    def note(self, commit_log_offset: int, reason: str, where: str) -> None:
        with self._lock:
            if commit_log_offset in self._seen:
                return
            if len(self._seen) < MAX_REMEMBERED:
                self._seen.add(commit_log_offset)
            self.count += 1
        log.error("damaged record at commit-log offset %d (%s): %s; skipped (`halfmq broker --verify` lists all damage)",
                  commit_log_offset, where, reason)
