"""One broker per data directory, enforced with an exclusive flock the kernel drops on death."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path


class DataDirLocked(Exception):
    pass


class DataDirLock:
    def __init__(self, directory: Path) -> None:
        self.path = Path(directory) / "lock"
        self._fd: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "another process"
            os.close(fd)
            raise DataDirLocked(
                f"data directory {self.path.parent} is in use by broker pid {holder}; "
                "stop it or choose another --data-dir"
            ) from None
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode(), 0)
        except OSError:
            pass  # a full disk: the pid is only a hint for the message above, the flock is the lock
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
