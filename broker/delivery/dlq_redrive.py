"""Bulk redrives of a consumer group's DLQ (SQS's StartMessageMoveTask): the jobs, their pacing, their bound.

A job resends the group's dead letters from ``next_offset`` up to ``end_offset`` (the DLQ's end when it started, or
``max_messages`` past its first) one at a time through the one resend path (``usecases.groups``), paced evenly at
``rate`` a second. Pure bookkeeping with explicit times: the use case's loop does the I/O. One job per group, and at
most ``limit`` jobs remembered (running ones and the latest finished ones, which their GET still shows).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from halfmq.errors import DlqRedriveNotFound, DlqRedriveRunning, InvalidDlqRedrive, TooManyDlqRedrives


class RedriveState(str, Enum):
    RUNNING = "running"
    DONE = "done"
    STOPPED = "stopped"  # by an operator (DELETE)
    FAILED = "failed"  # a resend failed other than for a missing dead letter (a full disk, the topic gone …)


@dataclass
class RedriveJob:
    group: str
    first_offset: int
    end_offset: int
    rate: float  # resends a second
    started_ms: int
    next_offset: int = 0
    resent: int = 0
    missing: int = 0  # dead letters passed over: damaged, or their topic deleted
    state: RedriveState = RedriveState.RUNNING
    ended_ms: int | None = None
    error: str | None = None

    def __post_init__(self) -> None:
        self.next_offset = max(self.next_offset, self.first_offset)

    @property
    def total(self) -> int:
        return self.end_offset - self.first_offset

    def delay(self, elapsed: float) -> float:
        """Seconds to wait before the next resend, ``elapsed`` seconds after the job started: evenly paced at ``rate``."""
        return max(0.0, (self.next_offset - self.first_offset) / self.rate - elapsed)

    def passed(self, resent: bool) -> None:
        """The dead letter at ``next_offset`` was resent (or, ``resent=False``, passed over as missing)."""
        if resent:
            self.resent += 1
        else:
            self.missing += 1
        self.next_offset += 1

    def end(self, state: RedriveState, now_ms: int, error: str | None = None) -> None:
        if self.state is RedriveState.RUNNING:
            self.state, self.ended_ms, self.error = state, now_ms, error

    @property
    def finished(self) -> bool:
        return self.next_offset >= self.end_offset


class Redrives:
    """The jobs, one per group; ``limit`` bounds how many are kept (running ones refuse more, finished ones go first)."""

    def __init__(self, limit: int, rate: float = 100.0, max_rate: float = 10_000.0) -> None:
        """``rate``: a job's pace when its request names none; ``max_rate``: the most a request may name."""
        self.limit, self.rate, self.max_rate = limit, rate, max_rate
        self._jobs: dict[str, RedriveJob] = {}

    def rate_for(self, requested: float | None) -> float:
        """The pace of a new job: ``requested`` (at most ``max_rate``: InvalidDlqRedrive past it), else the default."""
        if requested is None:
            return self.rate
        if requested > self.max_rate:
            raise InvalidDlqRedrive(f"rate_per_second {requested} is over HALFMQ_BROKER_DLQ_REDRIVE_MAX_RATE ({self.max_rate})")
        return requested

    def start(self, group: str, first: int, end: int, max_messages: int | None, rate: float, now_ms: int) -> RedriveJob:
        """A new job for ``group`` over ``[first, end)`` (at most ``max_messages``); DlqRedriveRunning while one runs for
        it, TooManyDlqRedrives when ``limit`` jobs run."""
        current = self._jobs.get(group)
        if current is not None and current.state is RedriveState.RUNNING:
            raise DlqRedriveRunning(f"a redrive of {group!r}'s DLQ is running: watch it, or stop it (DELETE) first")
        running = sum(1 for j in self._jobs.values() if j.state is RedriveState.RUNNING)
        if running >= self.limit:
            raise TooManyDlqRedrives(f"{running} DLQ redrives are running (HALFMQ_BROKER_DLQ_REDRIVE_JOBS): wait for one to end")
        self._jobs.pop(group, None)
        for old in [g for g, j in self._jobs.items() if j.state is not RedriveState.RUNNING][:max(0, len(self._jobs) + 1 - self.limit)]:
            del self._jobs[old]  # the oldest finished ones (insertion order)
        if max_messages is not None:
            end = min(end, first + max_messages)
        job = RedriveJob(group, first, max(first, end), rate, now_ms)
        self._jobs[group] = job
        return job

    def find(self, group: str) -> RedriveJob | None:
        """The group's latest job, None when none was started (or it was forgotten for newer ones)."""
        return self._jobs.get(group)

    def get(self, group: str) -> RedriveJob:
        job = self._jobs.get(group)
        if job is None:
            raise DlqRedriveNotFound(f"no redrive of {group!r}'s DLQ was started (or it was forgotten for newer ones)")
        return job

    def __len__(self) -> int:
        return len(self._jobs)
