"""One lock for the whole machine, so the suite's two processes take turns on what they share.

``bin/test`` runs two pytest processes. Some things they use are not theirs alone: the one Docker engine, and
the Node.js client that ``npm ci`` installs into the source tree (``npm ci`` deletes ``node_modules`` first, so a
second process that installs at the same time pulls the client out from under the first one's test).
"""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def machine_lock(path: Path) -> Iterator[None]:
    """An exclusive lock on ``path``, waited for; let go when the block ends or the process dies."""
    with path.open("a") as file:
        fcntl.flock(file, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(file, fcntl.LOCK_UN)
