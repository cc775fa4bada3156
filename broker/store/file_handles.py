"""The descriptors the store reads its files through: at most ``limit`` kept open, the least recently used closed first.

Why: the store had one descriptor per commit-log segment, consume-queue file and key-index file, open for ever, so
their number grew with history (109 at 20M messages) until the broker could not start ("Too many open files"). Now
only the files being written keep a descriptor of their own (the last segment, each queue's last file, the index file
being filled, and a rolled one until its fsync); every read goes through this table, which opens a file on use and
closes the coldest idle one past the bound.

A descriptor is closed only when no reader holds it (``use`` counts its users), so a reader never preads a number
that was closed, or reused for another file, under it. ``forget`` closes a file's descriptor for good (at once, or when
its last reader lets go): what deleting a file calls. Retention, with readers running, unlinks first and forgets
after, so no reader can open the path again between the two and leave a deleted file's descriptor in the table; a
reader that opens it after the unlink gets FileNotFoundError, which each store part reads as "below the log start".
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

DEFAULT_LIMIT = 256  # HALFMQ_BROKER_OPEN_FILES's default


@dataclass(slots=True)
class _Handle:
    fd: int
    users: int = 0
    forgotten: bool = False  # closed when its last user lets go, never handed out again


class FileHandles:
    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        self.limit = limit
        self._open: OrderedDict[Path, _Handle] = OrderedDict()
        self._lock = threading.Lock()

    @contextmanager
    def use(self, path: Path) -> Iterator[int]:
        """A descriptor of ``path`` for reading, held until the block ends (opened if it is not open)."""
        handle = self._take(path)
        try:
            yield handle.fd
        finally:
            self._let_go(handle)

    def pread(self, path: Path, size: int, offset: int) -> bytes:
        """``size`` bytes of ``path`` from ``offset``, its descriptor held for the one read as ``use`` holds it. Not a
        ``use`` block because it is every record a consumer receives: a generator context manager (and the ExitStack
        around it) cost ~20 us a read on this machine, a pread ~1 us."""
        handle = self._take(path)
        try:
            return os.pread(handle.fd, size, offset)
        finally:
            self._let_go(handle)

    def _take(self, path: Path) -> _Handle:
        """``path``'s handle with one more user (opened if it is not open: FileNotFoundError if the file is gone)."""
        with self._lock:
            handle = self._open.get(path)
            if handle is None:
                handle = _Handle(os.open(path, os.O_RDONLY))
                self._open[path] = handle
                self._close_coldest()
            else:
                self._open.move_to_end(path)
            handle.users += 1
        return handle

    def _let_go(self, handle: _Handle) -> None:
        with self._lock:
            handle.users -= 1
            if handle.forgotten and not handle.users:
                os.close(handle.fd)
            elif len(self._open) > self.limit:
                self._close_coldest()

    def _close_coldest(self) -> None:
        """Close idle descriptors, least recently used first, until at most ``limit`` are open (those in use stay)."""
        excess = len(self._open) - self.limit
        if excess <= 0:
            return
        for path in [p for p, h in self._open.items() if not h.users][:excess]:
            os.close(self._open.pop(path).fd)

    def forget(self, path: Path) -> None:
        """Close ``path``'s descriptor (now, or when its last reader lets go): the file is about to be deleted or cut."""
        with self._lock:
            handle = self._open.pop(path, None)
            if handle is None:
                return
            if handle.users:
                handle.forgotten = True
            else:
                os.close(handle.fd)

    @property
    def open_count(self) -> int:
        return len(self._open)

    def close(self) -> None:
        with self._lock:
            for handle in self._open.values():
                if handle.users:
                    handle.forgotten = True
                else:
                    os.close(handle.fd)
            self._open.clear()
