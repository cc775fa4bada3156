"""The log start: the lowest commit-log offset the store still holds, recorded in ``log_start.json``.

Retention records the new start before it deletes a segment, so a crash between the two leaves segments below the
recorded start, which the next open deletes (``finish``), and a segment missing below the first one kept is never
taken for retention's work: a first segment that starts past the recorded start was deleted by hand, and
``halfmq broker --verify`` reports it (verify.py). Without the file (a store from before retention) the start is 0.
"""

from __future__ import annotations

from pathlib import Path

from .atomic_file import read_json, write_json

FILE = "log_start.json"


def _parse(raw: dict) -> int:
    offset = raw["offset"]
    if not isinstance(offset, int) or offset < 0:
        raise ValueError("offset is not a non-negative integer")
    return offset


def read_log_start(root: Path) -> int:
    """The recorded log start under ``root`` (0 when none is recorded); DamagedFile when the file is not ours."""
    return read_json(root / FILE, 0, _parse, remedy="delete it if no segment was ever deleted by retention")


def write_log_start(root: Path, offset: int) -> None:
    """Record ``offset`` as the log start, durably, before anything below it is deleted."""
    write_json(root / FILE, {"offset": offset})
