from __future__ import annotations

import errno

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
