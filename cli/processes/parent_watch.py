"""A server started by :class:`~halfmq.cli.processes.child_process.ChildProcess` stops when the process that started it is gone.

Why: children run in their own session (so a Ctrl-C reaches the parent first), so nothing ends
them when the parent dies without its cleanup: a test run killed by a timeout (SIGTERM or SIGKILL
to pytest, mid-teardown) left its broker and order service running with parent pid 1. The parent
puts its pid in ``HALFMQ_EXIT_WITH_PARENT``; the child takes the variable out of its environment
(its own children must not inherit a pid that is not their parent's) and a daemon thread polls
``getppid``. (A pid that is not this process's parent at start came through some other process
and is ignored; parent pid 1 at start means the parent is gone already.) When it changes, the parent is gone: the child sends itself SIGTERM, so the server
shuts down as on any stop, and SIGKILL if it is still running ``grace`` seconds later.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import MutableMapping

ENV = "HALFMQ_EXIT_WITH_PARENT"

log = logging.getLogger(__name__)


def watch_parent_from_env(environ: MutableMapping[str, str] = os.environ, interval: float = 0.5,
                          grace: float = 15.0) -> threading.Thread | None:
    """Start the watch if ``environ`` names a parent pid; the thread, or None if there is nothing to watch."""
    value = environ.pop(ENV, None)
    if not value:
        return None
    try:
        parent = int(value)
    except ValueError:
        log.warning("%s=%r is not a process id; not watching the parent", ENV, value)
        return None
    if os.getppid() != parent and os.getppid() != 1:
        # Inherited through a process that is not halfmq's (a shell, a JVM): that one's parent is not ours to watch.
        return None
    thread = threading.Thread(target=_watch, args=(parent, interval, grace), name="halfmq-parent-watch", daemon=True)
    thread.start()
    return thread


def _watch(parent: int, interval: float, grace: float) -> None:
    while os.getppid() == parent:
        time.sleep(interval)
    log.warning("the process that started this one (pid %s) is gone: stopping", parent)
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(grace)
    os.kill(os.getpid(), signal.SIGKILL)
