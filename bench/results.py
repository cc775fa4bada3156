"""The result document: runs summarised into cases, cases into scenarios, ratios to baselines.

Shape (what ``--json`` writes and ``bench.report`` reads)::

    {"format": "halfmq-bench/1", "command": ..., "started_at": ..., "finished_at": ...,
     "machine": {...}, "versions": {...}, "settings": {...},
     "baselines": {name: case},
     "scenarios": {name: {"status": "ok"|"unavailable"|"failed", "reason"?, "info"?, "cases": {name: case}}},
     "gates": [...]}

A throughput case: ``{"unit", "concurrency", "driver", "runs": [...],
"ops_per_s": {"median", "min", "max"}, "p50_ms", "p99_ms", "baseline"?,
"ratio"?}`` - ``ops_per_s`` is in the case's unit (messages/s for batches
and consumption, transactions/s, orders/s) and p50/p99 are the medians over
runs of each run's per-operation latency percentiles. A timed case (recovery,
spark) has ``"seconds": {"median", "min", "max"}`` instead of ``ops_per_s``; a case of another unit (a lateness
in ms, a memory in MiB: ``timers``) has ``"figures": {"median", "min", "max"}`` in its ``unit``.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .load import Run

FORMAT = "halfmq-bench/1"


def _stats(values: list[float], digits: int = 1) -> dict[str, float]:
    return {"median": round(statistics.median(values), digits), "min": round(min(values), digits),
            "max": round(max(values), digits)}


def _median_of(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return round(statistics.median(present), 3) if present else None


def throughput_case(runs: list[Run], *, unit: str, concurrency: int, what: str, baseline: str | None = None,
                    **info: Any) -> dict[str, Any]:
    if not runs:
        raise ValueError("a case needs at least one run")
    case: dict[str, Any] = {
        "what": what,
        "unit": unit,
        "concurrency": concurrency,
        "driver": runs[0].driver,
        "runs": [r.as_json() for r in runs],
        "ops_per_s": _stats([r.items_per_s for r in runs]),
        "p50_ms": _median_of(r.p50_ms for r in runs),
        "p99_ms": _median_of(r.p99_ms for r in runs),
        "errors": sum(r.errors for r in runs),
    }
    if baseline:
        case["baseline"] = baseline
    case.update(info)
    return case


def timed_case(runs: list[dict[str, Any]], *, what: str, key: str = "seconds", **info: Any) -> dict[str, Any]:
    """Cases measured as a duration per run (``run[key]`` seconds)."""
    if not runs:
        raise ValueError("a case needs at least one run")
    case: dict[str, Any] = {"what": what, "unit": "s", "runs": runs,
                            "seconds": _stats([r[key] for r in runs], digits=3)}
    case.update(info)
    return case


def scenario_ok(cases: dict[str, dict], **info: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"status": "ok", "cases": cases}
    if info:
        out["info"] = info
    return out


def scenario_unavailable(reason: str) -> dict[str, Any]:
    return {"status": "unavailable", "reason": reason, "cases": {}}


def scenario_failed(reason: str, cases: dict[str, dict] | None = None) -> dict[str, Any]:
    return {"status": "failed", "reason": reason, "cases": cases or {}}


def attach_ratios(doc: dict[str, Any]) -> None:
    """Every case that names a baseline gets ``ratio`` = its median / the baseline's median."""
    baselines = doc.get("baselines", {})
    for scenario in doc.get("scenarios", {}).values():
        for case in scenario.get("cases", {}).values():
            name = case.get("baseline")
            base = baselines.get(name) if name else None
            if base and "ops_per_s" in case and base.get("ops_per_s", {}).get("median"):
                case["ratio"] = round(case["ops_per_s"]["median"] / base["ops_per_s"]["median"], 2)


def headline(case: dict[str, Any]) -> float | None:
    """The one number a case stands for: median ops/s, or median seconds for timed cases."""
    if "ops_per_s" in case:
        return case["ops_per_s"]["median"]
    if "seconds" in case:
        return case["seconds"]["median"]
    if "figures" in case:
        return case["figures"]["median"]
    return None


def write(doc: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=2, sort_keys=False) + "\n")
    tmp.replace(path)


def load(path: Path) -> dict[str, Any]:
    doc = json.loads(Path(path).read_text())
    if doc.get("format") != FORMAT:
        raise ValueError(f"{path} is not a halfmq bench result ({doc.get('format')!r})")
    return doc
