"""One log line when a kind of write starts failing and one when it works again, not one per attempt.

A full disk fails every send and every periodic snapshot until room comes
back; a line (or a traceback) per attempt would bury the one line that matters.
"""

from __future__ import annotations

import logging
import threading

log = logging.getLogger(__name__)


class FailureWatch:
    def __init__(self, failing: str, working: str, logger: logging.Logger = log) -> None:
        self._log = logger
        self._failing_text = failing  # "store unavailable: %s"
        self._working_text = working
        self._lock = threading.Lock()
        self.failure: str | None = None

    def failed(self, exc: BaseException | str) -> None:  # an exception, or a sentence that names one
        with self._lock:
            if self.failure is not None:
                return
            self.failure = str(exc)
        self._log.error(self._failing_text, exc)

    def succeeded(self) -> None:
        if self.failure is None:  # the common case, without the lock
            return
        with self._lock:
            if self.failure is None:
                return
            self.failure = None
        self._log.warning(self._working_text)
