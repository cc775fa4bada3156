"""Bulk DLQ redrives: evenly paced, one per group, at most ``limit`` kept."""

from __future__ import annotations

import pytest

from halfmq.broker.delivery.dlq_redrive import Redrives, RedriveState
from halfmq.errors import DlqRedriveNotFound, DlqRedriveRunning, InvalidDlqRedrive, TooManyDlqRedrives


def test_a_job_is_paced_evenly_at_its_rate() -> None:
    job = Redrives(4).start("g", 10, 20, None, rate=5.0, now_ms=0)
    assert job.delay(0.0) == 0.0  # the first goes at once
    job.passed(True)
    assert job.delay(0.0) == pytest.approx(0.2)
    assert job.delay(0.5) == 0.0  # behind: no wait until it catches up
    job.passed(False)
    assert (job.resent, job.missing, job.next_offset) == (1, 1, 12)


def test_max_messages_bounds_the_job() -> None:
    job = Redrives(4).start("g", 10, 20, 3, rate=1.0, now_ms=0)
    assert (job.total, job.end_offset) == (3, 13)
    assert Redrives(4).start("h", 10, 20, 99, rate=1.0, now_ms=0).total == 10


def test_a_job_is_finished_once_every_offset_passed() -> None:
    job = Redrives(4).start("g", 0, 2, None, rate=1.0, now_ms=0)
    job.passed(True)
    assert not job.finished
    job.passed(True)
    assert job.finished


def test_one_job_per_group_runs_at_a_time() -> None:
    jobs = Redrives(4)
    job = jobs.start("g", 0, 5, None, rate=1.0, now_ms=0)
    with pytest.raises(DlqRedriveRunning):
        jobs.start("g", 0, 5, None, rate=1.0, now_ms=0)
    job.end(RedriveState.STOPPED, 7)
    assert (job.state, job.ended_ms) == (RedriveState.STOPPED, 7)
    job.end(RedriveState.DONE, 9)  # an ended job stays as it ended
    assert job.state is RedriveState.STOPPED
    assert jobs.start("g", 0, 5, None, rate=1.0, now_ms=10) is jobs.get("g")


def test_past_the_limit_running_jobs_refuse_more_and_finished_ones_are_forgotten() -> None:
    jobs = Redrives(2)
    a, _ = jobs.start("a", 0, 1, None, 1.0, 0), jobs.start("b", 0, 1, None, 1.0, 0)
    with pytest.raises(TooManyDlqRedrives):
        jobs.start("c", 0, 1, None, 1.0, 0)
    a.end(RedriveState.DONE, 1)
    jobs.start("c", 0, 1, None, 1.0, 0)
    assert len(jobs) == 2
    with pytest.raises(DlqRedriveNotFound):
        jobs.get("a")


def test_a_request_names_its_rate_up_to_the_max_else_gets_the_default() -> None:
    jobs = Redrives(1, rate=100.0, max_rate=500.0)
    assert (jobs.rate_for(None), jobs.rate_for(500.0)) == (100.0, 500.0)
    with pytest.raises(InvalidDlqRedrive):
        jobs.rate_for(500.1)
