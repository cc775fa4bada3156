"""CPU time per item from /proc: the figure a shared machine skews much less than a rate.

Each process's user + system CPU is read before and after a measured run and
divided by what the run carried (credited orders, acknowledged messages); the
bench's own process (the load driver) is counted as ``driver``.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol


class HasPid(Protocol):
    @property
    def pid(self) -> int | None: ...


def cpu_seconds(pid: int | None) -> float | None:
    """User + system CPU a process has used so far (Linux ``/proc``; None elsewhere or once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except (OSError, TypeError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_now(servers: Mapping[str, HasPid]) -> dict[str, float | None]:
    now = {name: cpu_seconds(server.pid) for name, server in servers.items()}
    times = os.times()
    now["driver"] = times.user + times.system
    return now


def cpu_ms_per_item(before: dict[str, float | None], after: dict[str, float | None], items: int) -> dict[str, float]:
    """CPU milliseconds each process spent per item, and their ``total`` (processes gone or not there left out)."""
    out = {name: round((after[name] - start) * 1e3 / items, 3)  # type: ignore[operator]
           for name, start in before.items() if start is not None and after.get(name) is not None and items}
    if out:
        out["total"] = round(sum(out.values()), 3)
    return out


def medians(per_run: list[dict[str, float]]) -> dict[str, float]:
    """Per process, the median over runs of its CPU ms per item (runs without a figure for it left out)."""
    names = {name for figures in per_run for name in figures}
    return {name: round(statistics.median(f[name] for f in per_run if name in f), 3) for name in sorted(names)}
