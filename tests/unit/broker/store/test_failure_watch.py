from __future__ import annotations

import logging

import pytest

from halfmq.broker.store.failure_watch import FailureWatch


def test_one_line_when_writes_start_failing_and_one_when_they_work_again(caplog: pytest.LogCaptureFixture) -> None:
    watch = FailureWatch("unavailable: %s", "available again")
    with caplog.at_level(logging.WARNING):
        watch.succeeded()
        for _ in range(100):
            watch.failed(OSError(28, "No space left on device"))
        for _ in range(100):
            watch.succeeded()
    assert [r.getMessage() for r in caplog.records] == ["unavailable: [Errno 28] No space left on device", "available again"]
    assert watch.failure is None
