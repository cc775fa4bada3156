from __future__ import annotations

import errno
import threading

import pytest

from halfmq.broker.store.flush_service import GroupCommitService


def test_a_failed_fsync_fails_its_waiters_reports_the_error_and_claims_nothing_durable() -> None:
    failures: list[OSError] = []

    def failing_fsync() -> int:
        raise OSError(errno.EIO, "Input/output error")

    service = GroupCommitService(failing_fsync, 0, on_failure=failures.append)
    service.start()
    try:
        with pytest.raises(OSError, match="Input/output error"):
            service.wait_for(100).result(5)
        assert service.flushed_offset == 0
    finally:
        service.stop()
    assert [exc.errno for exc in failures] == [errno.EIO]


def test_a_waiter_that_cancels_its_future_does_not_stop_the_fsync_thread() -> None:
    # a follower cancelled mid-fetch (a new leader term) cancels the future it awaited through asyncio.wrap_future
    release = threading.Event()
    written = [0]

    def slow_fsync() -> int:
        release.wait(5)
        return written[0]

    service = GroupCommitService(slow_fsync, 0)
    service.start()
    try:
        written[0] = 100
        service.wait_for(100).cancel()  # gone before the fsync covering it ends
        release.set()
        written[0] = 200
        assert service.wait_for(200).result(5) == 200 and service.flushed_offset == 200
        assert service.is_alive()
    finally:
        service.stop()
