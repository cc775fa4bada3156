"""A probe that keeps asking a broker's /healthz while a test attacks it, and says how long the slowest answer took.

A liveness bound, not a benchmark: an attack that froze the event loop made /healthz wait tens of seconds (issue 42);
a test asserts the slowest answer stayed under a margin that only a stalled loop can exceed.
"""

from __future__ import annotations

import threading
import time
from types import TracebackType

import httpx


class HealthProbe:
    """``with HealthProbe(url) as probe: ...``; then ``probe.slowest`` (seconds) and ``probe.answered``."""

    def __init__(self, url: str, every: float = 0.05) -> None:
        self._url = f"{url}/healthz"
        self._every = every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="health-probe", daemon=True)
        self.slowest = 0.0
        self.answered = 0

    def __enter__(self) -> HealthProbe:
        self._thread.start()
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        with httpx.Client(timeout=120) as client:
            while not self._stop.is_set():
                started = time.monotonic()
                try:
                    client.get(self._url)
                    self.answered += 1
                except httpx.HTTPError:
                    pass  # a refused connection (a stopped node) counts as a slow answer below
                self.slowest = max(self.slowest, time.monotonic() - started)
                self._stop.wait(self._every)
