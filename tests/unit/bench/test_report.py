"""docs/benchmarks.md: the SDK rows beside the peers' own-client rows, the latency gates, the peers' commands."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from halfmq.bench import report


def _case(ops: float, p99_ms: float = 2.0) -> dict[str, Any]:
    return {"what": "x", "unit": "msg/s", "concurrency": 64, "driver": "aiohttp", "runs": [],
            "ops_per_s": {"median": ops, "min": ops, "max": ops}, "p50_ms": 1.0, "p99_ms": p99_ms}


def _doc(scenarios: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {
        "format": "halfmq-bench/1", "command": "halfmq bench send", "started_at": "t0", "finished_at": "t1",
        "machine": {"cpu_model": "cpu", "cores": 2, "memory_gib": 4, "kernel": "k", "os": "os", "python": "3.11",
                    "python_implementation": "CPython"},
        "versions": {"halfmq": "0.1.0"},
        "settings": {"quick": False, "runs": 3, "seconds": 8, "warmup": 1, "concurrency": 64, "body_bytes": 256, "driver": "aiohttp"},
        "baselines": {}, "scenarios": {name: {"status": "ok", "cases": cases} for name, cases in scenarios.items()},
    }


PEERS = {
    "redis_always": {"xadd_c64": {"rps_median": 10_000.0, "rps_min": 9_000.0, "rps_max": 11_000.0}},
    "nats_jetstream_r3": {"publish_c64": {"rps_median": 8_000.0, "rps_min": 8_000.0, "rps_max": 8_000.0}},
}


def _render(doc: dict[str, Any], peers_dir: Path) -> str:
    return report.render(doc, PEERS, bench_json=Path("r.json"), peers_dir=peers_dir, out=Path("-"))


def test_the_sdk_send_row_stands_beside_redis_with_the_ratio(tmp_path: Path) -> None:
    text = _render(_doc({"send": {"sdk_single_c64": _case(12_000)}}), tmp_path)
    row = next(line for line in text.splitlines() if line.startswith("| SDK AsyncProducer.send, 64 callers, durable |"))
    assert "12,000" in row and "Redis 7 XADD" in row and "1.20×" in row


def test_replicated_quorum_sends_stand_beside_the_nats_r3_peer(tmp_path: Path) -> None:
    text = _render(_doc({"replicated": {"quorum_c64": _case(4_000)}}), tmp_path)
    row = next(line for line in text.splitlines() if "NATS JetStream R3" in line and line.startswith("| quorum send on a 3-node set"))
    assert "0.50×" in row


def test_a_latency_gate_renders_in_milliseconds(tmp_path: Path) -> None:
    text = _render(_doc({"orders": {"orders_c64": _case(1_200, p99_ms=180.0)}}), tmp_path)
    row = next(line for line in text.splitlines() if line.startswith("| orders on SQLite: p99"))
    assert "180.0 ms" in row and "≤ 250 ms" in row and "**met**" in row


def test_the_commands_name_the_projects_peer_runners_not_the_shared_tree(tmp_path: Path) -> None:
    text = _render(_doc({}), tmp_path)
    assert "bench/peer_runners/redis_bench.py" in text
    assert "/work/shared" not in text
