"""Background durability: group commit for the commit log, periodic checkpoints.

Writers append on their own thread and then wait on a future for "durable up to
my offset". One thread fsyncs whatever has been written since the last fsync
and resolves every waiter it covers, so N concurrent sends share one fsync
instead of paying for N. The event loop never blocks on fsync.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import TypeGuard

from .failure_watch import FailureWatch

log = logging.getLogger(__name__)


class GroupCommitService(threading.Thread):
    """Resolves ``wait_for(offset)`` futures once an fsync covers ``offset``.

    All callers waiting while one fsync runs share the next one: there is one
    pending future per flush generation, not one per append.
    """

    def __init__(self, flush: Callable[[], int], flushed: int, *, interval: float | None = None,
                 on_failure: Callable[[OSError], None] | None = None) -> None:
        super().__init__(name="halfmq-group-commit", daemon=True)
        self._flush = flush
        self._on_failure = on_failure or FailureWatch("commit log fsync failed: %s", "", log).failed
        self._interval = interval  # async mode: flush on a timer as well
        self._cond = threading.Condition()
        self._pending: Future[int] | None = None
        self._flushed = flushed
        self._stopping = False
        self.flush_count = 0

    @property
    def flushed_offset(self) -> int:
        return self._flushed

    def wait_for(self, offset: int) -> Future[int]:
        with self._cond:
            if offset <= self._flushed:
                done: Future[int] = Future()
                done.set_result(self._flushed)
                return done
            if self._pending is None or self._pending.cancelled():  # a cancelled one is never handed out again
                self._pending = Future()
                self._cond.notify()
            return self._pending

    def truncated(self, offset: int) -> None:
        """The log was cut back to ``offset`` (a follower's divergent tail): durable no further than that."""
        with self._cond:
            self._flushed = min(self._flushed, offset)

    def run(self) -> None:
        while True:
            with self._cond:
                while self._pending is None and not self._stopping:
                    if not self._cond.wait(self._interval) and self._interval is not None:
                        break
                if self._stopping and self._pending is None:
                    return
                batch, self._pending = self._pending, None
            try:
                flushed = self._flush()
            except OSError as exc:  # disk failure: every waiter must hear of it
                self._on_failure(exc)
                if _claim(batch):
                    batch.set_exception(exc)
                time.sleep(0.05)
                continue
            except Exception as exc:
                log.exception("commit log fsync failed")
                if _claim(batch):
                    batch.set_exception(exc)
                time.sleep(0.05)
                continue
            self.flush_count += 1
            with self._cond:
                self._flushed = max(self._flushed, flushed)
            if _claim(batch):
                batch.set_result(flushed)

    def stop(self) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify()
        self.join(timeout=10)


def _claim(batch: Future[int] | None) -> TypeGuard[Future[int]]:
    """True if ``batch`` may be resolved now: a waiter that gave up (a follower cancelled mid-fetch, through
    ``asyncio.wrap_future``) may have cancelled it, and resolving a cancelled future would end this thread."""
    return batch is not None and batch.set_running_or_notify_cancel()


class PeriodicService(threading.Thread):
    """Runs ``task`` every ``interval`` seconds until stopped, and once more on stop."""

    def __init__(self, name: str, task: Callable[[], None], interval: float) -> None:
        super().__init__(name=name, daemon=True)
        self._task = task
        self._interval = interval
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.wait(self._interval):
            self._run_once()

    def _run_once(self) -> None:
        try:
            self._task()
        except Exception:
            log.exception("%s failed", self.name)

    def stop(self) -> None:
        self._stop_event.set()
        self.join(timeout=30)
        self._run_once()
