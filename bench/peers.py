"""The peers' results (`halfmq bench peers` → one JSON line per file in /tmp/peer_results).

Only read here: :mod:`halfmq.bench.peer_command` runs the runner scripts in
``halfmq.bench.peer_runners`` and writes the files. Their three summary shapes are
``{"rps_median", "rps_min", "rps_max", "p50_ms_median", "p99_ms_median"}``,
``{"median_rps", "min", "max"}`` (fsync) and ``{"median", "min", "max"}``
(seconds, spark).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC
from pathlib import Path
from typing import Any

DEFAULT_RESULTS = Path("/tmp/peer_results")


@dataclass(frozen=True)
class Figure:
    median: float
    low: float | None
    high: float | None
    p50_ms: float | None = None
    p99_ms: float | None = None
    unit: str = "/s"


def load(results_dir: Path) -> dict[str, Any]:
    """``{file stem: parsed last JSON line}``; files without a result map to ``{"error": ...}``."""
    out: dict[str, Any] = {}
    if not results_dir.is_dir():
        return out
    for path in sorted(results_dir.glob("*.json")):
        lines = [line for line in path.read_text(errors="replace").strip().splitlines() if line.startswith("{")]
        try:
            out[path.stem] = json.loads(lines[-1])
        except (IndexError, json.JSONDecodeError) as exc:
            out[path.stem] = {"error": f"no result ({type(exc).__name__})"}
    return out


def written(results_dir: Path) -> tuple[str, str] | None:
    """When the peers' result files were written (oldest, newest), UTC, to judge "same session"."""
    from datetime import datetime

    stamps = sorted(p.stat().st_mtime for p in results_dir.glob("*.json")) if results_dir.is_dir() else []
    if not stamps:
        return None
    fmt = lambda t: datetime.fromtimestamp(t, UTC).isoformat(timespec="minutes")  # noqa: E731
    return fmt(stamps[0]), fmt(stamps[-1])


def figure(peers: dict[str, Any], file: str, *keys: str) -> Figure | None:
    """The summary at ``peers[file][k1][k2]…`` as a Figure, or None when absent."""
    node: Any = peers.get(file)
    for key in keys:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    if not isinstance(node, dict):
        return None
    if "rps_median" in node:
        return Figure(node["rps_median"], node.get("rps_min"), node.get("rps_max"), node.get("p50_ms_median"), node.get("p99_ms_median"))
    if "median_rps" in node:
        return Figure(node["median_rps"], node.get("min"), node.get("max"))
    if "median" in node:
        return Figure(node["median"], node.get("min"), node.get("max"), unit="s")
    return None


def commands(results_dir: Path) -> dict[str, str]:
    """``{peer name: exact command}``: the one each result was produced by (its ``NAME.cmd``), else the catalogue's."""
    from .peer_command import PEERS, command_text

    out: dict[str, str] = {}
    for peer in PEERS:
        recorded = results_dir / f"{peer.name}.cmd"
        if recorded.is_file():
            out[peer.name] = recorded.read_text().strip()
        elif not peer.contrast:
            out[peer.name] = command_text(peer)
    return out
