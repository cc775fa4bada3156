"""Whether the store takes writes now, and how a write the disk refused is told.

Three states stop writes. A closed store takes none. A read-only store takes none until a restart: recovery could
not finish, an fsync failed (Linux may drop the unwritten pages and report it only once, so no later fsync proves
anything about them), or the undo of a failed write failed. And the last write the disk refused (full, over quota)
is remembered until one succeeds, logged once rather than at every attempt (``FailureWatch``). Every writing part of
the store (writer.py, replica_append.py, topic_writes.py) asks this one gate, and the checkpoint and recovery read it.
"""

from __future__ import annotations

from .failure_watch import FailureWatch
from .store_types import StoreClosed, StoreNotWritable, store_log


class WriteGate:
    def __init__(self) -> None:
        self.closed = False
        self.read_only: str | None = None  # why no write is taken until a restart (unfinished recovery, failed fsync)
        self._writes = FailureWatch(
            "store unavailable: %s; writes are refused until the disk takes them again",
            "store available again: writes succeed", store_log)

    @property
    def problem(self) -> str | None:
        """Why writes are refused now (read-only, or the last write failed), None while they work."""
        return self.read_only or self._writes.failure

    def check(self) -> None:
        """StoreClosed or StoreNotWritable unless a write may start now (called under the store's write lock)."""
        if self.closed:
            raise StoreClosed("the store is closed")
        if self.read_only is not None:
            raise StoreNotWritable(f"the store is read-only: {self.read_only}")

    def refused(self, what: str, exc: OSError) -> StoreNotWritable:
        """The error a caller gets for a write the disk refused; the failure is logged once until a write succeeds."""
        self._writes.failed(f"{what}: {exc}")
        return StoreNotWritable(f"{what}: {exc.strerror or exc}")

    def succeeded(self) -> None:
        """A write landed: the disk takes writes again (logged once, if it had refused one)."""
        self._writes.succeeded()

    def stop_writes(self, why: str) -> None:
        """Take no write until a restart, for ``why`` (logged as an error)."""
        self.read_only = why
        store_log.error("store is read-only: %s", why)

    def fsync_failed(self, exc: OSError) -> None:
        """After a failed fsync what was written since the last good one may not be on disk: let recovery check the log."""
        if self.read_only is None:
            self.stop_writes(f"an fsync of the commit log failed ({exc}); what was written since the last good "
                             "fsync may not be on disk: restart the broker so recovery checks the log")
