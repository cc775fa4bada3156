"""A real, small filesystem for disk-full tests: a tmpfs mounted under the test's tmp_path.

The broker gets ENOSPC from the kernel exactly as on a full production disk
(partial writes included); nothing in the store is mocked. Mounting needs root
(CAP_SYS_ADMIN), which the test machines and CI have; elsewhere the tests skip.
"""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

FILL_CHUNK = 64 * 1024


class SmallDisk:
    """A mounted tmpfs of ``size`` bytes; ``fill`` leaves a chosen amount of room, ``free`` gives it all back."""

    def __init__(self, path: Path, size: int) -> None:
        self.path = path
        self.size = size
        self.filler = path / "filler"

    def mount(self) -> SmallDisk:
        self.path.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={self.size}", "tmpfs", str(self.path)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs for disk-full tests (needs root/CAP_SYS_ADMIN): {done.stderr.strip()}")
        return self

    def unmount(self) -> None:
        subprocess.run(["umount", "--lazy", str(self.path)], check=False, capture_output=True)

    @property
    def room(self) -> int:
        st = os.statvfs(self.path)
        return st.f_bavail * st.f_frsize

    def fill(self, leave: int = 0) -> None:
        """Take every free byte (adding to an earlier fill), then give back ``leave`` bytes (whole pages)."""
        fd = os.open(self.filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            chunk = b"\0" * FILL_CHUNK
            while True:
                try:
                    if os.write(fd, chunk) < len(chunk):
                        continue  # the last partial write; the next one says ENOSPC
                except OSError as exc:
                    if exc.errno != errno.ENOSPC:
                        raise
                    break
            if leave:
                size = os.fstat(fd).st_size
                os.ftruncate(fd, max(0, size - leave))
        finally:
            os.close(fd)

    def free(self) -> None:
        self.filler.unlink(missing_ok=True)

    def resize(self, size: int) -> None:
        done = subprocess.run(["mount", "-o", f"remount,size={size}", str(self.path)], capture_output=True, text=True)
        if done.returncode != 0:
            raise OSError(f"cannot resize the tmpfs at {self.path} to {size}: {done.stderr.strip()}")

    def squeeze(self, leave: int = 0) -> None:
        """Full now, without writing a large filler: shrink the tmpfs to what it holds plus a page or so, then fill the rest.

        A big tmpfs (a whole node's data dir) costs memory only for what is written; this keeps it so.
        """
        for _ in range(20):
            st = os.statvfs(self.path)
            used = (st.f_blocks - st.f_bfree) * st.f_frsize
            try:
                self.resize(used + 256 * 1024)
                break
            except OSError:  # it grew between statvfs and the remount
                continue
        self.fill(leave)

    def release(self) -> None:
        """Room again: the filler gone and the tmpfs back to ``size``."""
        self.free()
        self.resize(self.size)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[SmallDisk]:
    """A 4 MiB tmpfs at ``tmp_path/disk``, unmounted at teardown (stop processes using it first)."""
    disk = SmallDisk(tmp_path / "disk", 4 * 1024 * 1024).mount()
    yield disk
    disk.unmount()
