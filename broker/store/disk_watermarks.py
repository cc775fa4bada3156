"""Disk watermarks: what the broker does as the data dir's filesystem fills, as a pure function of the used share.

Like RocketMQ's ``diskMaxUsedSpaceRatio`` (75 %: delete commit-log files early) and its refusal of puts once the disk
is fuller still: past the *early-delete* mark retention deletes the oldest segments no pin holds before their time, so
the broker frees space itself before a disk error refuses every write (acks, ends, heartbeats too); past the
*refuse-sends* mark new messages are refused (503 DISK_ALMOST_FULL, Retry-After) while what frees or settles
(receives, acks, nacks, transaction ends) goes on. Sends resume once the disk is a margin under the mark
(``disk_resume_margin``, 2 points: a disk hovering at a mark does not flip sends on and off at each reading); the level
is read anew every ``disk_check_interval`` seconds, and a refusal's Retry-After is that interval. docs/decisions/053-disk-watermarks.md says why.

The decision (``disk_level``, ``bytes_over_early_mark``) is tested with plain numbers; ``DiskWatch`` only reads the
filesystem (a ``DiskUsage`` callable, faked in tests) and keeps the last reading for the send path and /metrics.
"""

from __future__ import annotations

import enum
import logging
import math
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class DiskUsage:
    """One reading of a filesystem: bytes used and bytes still free to the broker (``df``'s Used and Avail)."""

    used: int
    free: int

    @property
    def used_ratio(self) -> float:
        """The used share as ``df`` shows it: used / (used + free), so blocks reserved for root count as neither."""
        size = self.used + self.free
        return self.used / size if size > 0 else 0.0


DiskReader = Callable[[], DiskUsage]


def filesystem_usage(path: Path) -> DiskReader:
    """The reader of the filesystem ``path`` is on (one statvfs a call)."""
    def read() -> DiskUsage:
        usage = shutil.disk_usage(path)
        return DiskUsage(used=usage.used, free=usage.free)
    return read


class DiskLevel(enum.IntEnum):
    """How full the disk is, against the two marks (the value is the /metrics gauge's)."""

    OK = 0
    EARLY_DELETE = 1  # past the first mark: retention deletes the oldest unpinned segments early
    REFUSE_SENDS = 2  # past the second too: new messages are refused


@dataclass(frozen=True, slots=True)
class DiskWatermarks:
    """The two used shares (0..1], the first no higher than the second; 1 turns a mark off. A level once reached is
    left only ``resume_margin`` under its mark."""

    early_delete_ratio: float
    refuse_sends_ratio: float
    resume_margin: float = 0.0


def disk_level(used_ratio: float, marks: DiskWatermarks, current: DiskLevel = DiskLevel.OK) -> DiskLevel:
    """The level a used share is at, coming from ``current``: a mark is passed once the share is above it (so a mark
    of 1 is never passed), and left once the share is ``resume_margin`` under it (hysteresis)."""
    for level, mark in ((DiskLevel.REFUSE_SENDS, marks.refuse_sends_ratio), (DiskLevel.EARLY_DELETE, marks.early_delete_ratio)):
        if used_ratio > mark or (current >= level and mark < 1 and used_ratio > mark - marks.resume_margin):
            return level
    return DiskLevel.OK


def bytes_over_early_mark(usage: DiskUsage, marks: DiskWatermarks) -> int:
    """How many bytes the disk must free to be back under the early-delete mark (0 when it is under it): what
    retention deletes early (retention.new_log_start's ``reclaim_bytes``)."""
    if usage.used_ratio <= marks.early_delete_ratio:
        return 0
    return usage.used - math.floor(marks.early_delete_ratio * (usage.used + usage.free))


class DiskWatch:
    """The last reading of the data dir's filesystem and its level: the send path asks ``sends_refused`` (no I/O),
    the broker's loop calls ``read`` every ``disk_check_interval`` seconds (runtime/services.py)."""

    def __init__(self, reader: DiskReader, marks: DiskWatermarks, check_interval: float = 1.0) -> None:
        self.reader = reader  # the I/O edge (a test's fake filesystem)
        self.marks = marks
        self.retry_after = max(1, math.ceil(check_interval))  # a refused send's Retry-After: the next reading
        self.level = DiskLevel.OK
        self.usage: DiskUsage | None = None
        self.refused_sends = 0  # sends refused at the refuse-sends mark since start (/metrics)

    @property
    def used_ratio(self) -> float:
        return self.usage.used_ratio if self.usage is not None else 0.0

    @property
    def sends_refused(self) -> bool:
        return self.level is DiskLevel.REFUSE_SENDS

    @property
    def reclaim_bytes(self) -> int:
        """What retention should free now beyond its limits (0 under the early-delete mark)."""
        return bytes_over_early_mark(self.usage, self.marks) if self.usage is not None else 0

    def read(self) -> DiskLevel:
        """Read the filesystem, say a change of level once in the log, and return the level now."""
        self.usage = self.reader()
        level = disk_level(self.usage.used_ratio, self.marks, self.level)
        if level is not self.level:
            ratio = f"{self.usage.used_ratio:.1%}"
            if level is DiskLevel.REFUSE_SENDS:
                log.error("the data dir's disk is %s full, past DISK_REFUSE_SENDS_RATIO (%s): sends are refused until it "
                          "is under it; receives, acks and transaction ends go on", ratio, self.marks.refuse_sends_ratio)
            elif level is DiskLevel.EARLY_DELETE:
                log.warning("the data dir's disk is %s full, past DISK_EARLY_DELETE_RATIO (%s): retention deletes the "
                            "oldest segments no pin holds before their time%s", ratio, self.marks.early_delete_ratio,
                            "; sends resume" if self.level is DiskLevel.REFUSE_SENDS else "")
            else:
                log.info("the data dir's disk is %s full, under both watermarks: sends and retention as usual", ratio)
            self.level = level
        return level

    def count_refused(self) -> None:
        self.refused_sends += 1
