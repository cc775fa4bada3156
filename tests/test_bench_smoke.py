"""`halfmq bench --quick` runs end to end and writes a well-formed result document.

A smoke test of the benchmark machinery (processes start and stop, the driver
measures, the JSON has the documented shape). It asserts no speed at all:
benchmarks are never timed tests. It calls the bench entry point as a
subprocess (``python -m bench.cli``), with sizes far below ``--quick``'s.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ("send", "tx", "consume")


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_quick_bench_writes_the_documented_json(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    proc = subprocess.run(
        [sys.executable, "-m", "halfmq.bench.cli", "--quick", "--json", str(out), "--seconds", "0.4", "--warmup", "0.1",
         "--consume-prefill", "3000", "--workdir", str(tmp_path / "work"), *SCENARIOS],
        cwd=ROOT, capture_output=True, text=True, timeout=110,
    )
    assert proc.returncode == 0, f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-5000:]}"
    doc = json.loads(out.read_text())

    assert doc["format"] == "halfmq-bench/1"
    for key in ("cpu_model", "cores", "memory_gib", "kernel", "python"):
        assert key in doc["machine"]
    assert doc["versions"]["halfmq"]
    assert doc["settings"]["quick"] is True and doc["settings"]["runs"] == 1

    assert set(doc["scenarios"]) == set(SCENARIOS)
    for name in SCENARIOS:
        scenario = doc["scenarios"][name]
        assert scenario["status"] == "ok", scenario
        assert scenario["cases"], name
        for case_name, case in scenario["cases"].items():
            where = f"{name}/{case_name}"
            assert len(case["runs"]) == 1, where
            assert set(case["ops_per_s"]) == {"median", "min", "max"}, where
            assert case["ops_per_s"]["min"] <= case["ops_per_s"]["median"] <= case["ops_per_s"]["max"], where
            assert case["ops_per_s"]["median"] > 0, where
            if "no_latency" in case:  # a case that cannot time single operations says why
                assert case["no_latency"] and case["p50_ms"] is None, where
            else:
                assert case["p50_ms"] is not None and case["p99_ms"] is not None, where
                assert case["p50_ms"] <= case["p99_ms"], where
            for run in case["runs"]:
                assert {"ops_per_s", "p50_ms", "p99_ms", "errors", "seconds"} <= set(run), where
                assert run["errors"] == 0, (where, run)
            if case.get("baseline"):
                assert case["baseline"] in doc["baselines"], where
                assert case["ratio"] > 0, where

    assert {"single_seq", "single_c64", "batch100_c64"} <= set(doc["scenarios"]["send"]["cases"])
    assert {"pairs_seq", "pairs_c64", "mix_c64"} <= set(doc["scenarios"]["tx"]["cases"])
    check_back = doc["scenarios"]["tx"]["cases"]["mix_c64"]["check_back"]
    assert check_back["committed_by_check"] == check_back["never_ended"]
    assert {"one_consumer", "four_consumers"} <= set(doc["scenarios"]["consume"]["cases"])

    gate_ids = {g["id"] for g in doc["gates"]}
    assert {"send_vs_fastapi_fsync", "batch_send", "recovery", "spark"} <= gate_ids
    assert "halfmq bench" in proc.stdout  # the rich table was printed


def test_report_renders_without_peer_results(tmp_path: Path) -> None:
    """bench.report turns a (hand-made, minimal) result into markdown even before the peers ran."""
    from halfmq.bench import report

    case = {"what": "x", "unit": "msg/s", "concurrency": 64, "driver": "aiohttp", "runs": [],
            "ops_per_s": {"median": 1000.0, "min": 900.0, "max": 1100.0}, "p50_ms": 1.0, "p99_ms": 2.0}
    doc = {
        "format": "halfmq-bench/1", "command": "halfmq bench send", "started_at": "t0", "finished_at": "t1",
        "machine": {"cpu_model": "cpu", "cores": 2, "memory_gib": 4, "kernel": "k", "os": "os", "python": "3.11",
                    "python_implementation": "CPython"},
        "versions": {"halfmq": "0.1.0"},
        "settings": {"quick": False, "runs": 3, "seconds": 8, "warmup": 1, "concurrency": 64, "body_bytes": 256, "driver": "aiohttp"},
        "baselines": {}, "scenarios": {"send": {"status": "ok", "cases": {"single_c64": case}}},
    }
    text = report.render(doc, {}, bench_json=Path("r.json"), peers_dir=tmp_path / "none", out=Path("-"))
    assert "## Gates" in text and "single_c64" in text and "1,000" in text


def _bench(tmp_path: Path, *args: str, timeout: float) -> dict:
    out = tmp_path / "bench.json"
    proc = subprocess.run(
        [sys.executable, "-m", "halfmq.bench.cli", "--quick", "--json", str(out), "--warmup", "0",
         "--workdir", str(tmp_path / "work"), *args],
        cwd=ROOT, capture_output=True, text=True, timeout=timeout,
    )
    assert proc.returncode == 0, f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-5000:]}"
    assert "halfmq bench" in proc.stdout  # the rich table was printed
    return json.loads(out.read_text())


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_faststream_bench_measures_the_framework_beside_the_sdk_in_alternating_rounds(tmp_path: Path) -> None:
    pytest.importorskip("faststream_halfmq")
    doc = _bench(tmp_path, "--faststream-messages", "300", "faststream", timeout=170)

    scenario = doc["scenarios"]["faststream"]
    assert scenario["status"] == "ok", scenario
    assert set(scenario["cases"]) == {"publish_faststream", "publish_sdk", "consume_faststream", "consume_sdk"}
    for name, case in scenario["cases"].items():
        assert case["unit"] == "msg/s" and len(case["runs"]) == 2, name  # --quick asks for 1 run: the scenario takes 2
        assert all(run["items"] == 300 and run["errors"] == 0 for run in case["runs"]), (name, case["runs"])
        assert case["ops_per_s"]["median"] > 0, name
    for phase in ("publish", "consume"):
        assert scenario["cases"][f"{phase}_faststream"]["vs_sdk"] > 0
        assert scenario["info"][f"{phase}_vs_sdk"] == scenario["cases"][f"{phase}_faststream"]["vs_sdk"]
    assert scenario["cases"]["publish_sdk"]["p50_ms"] is not None


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_spark_bench_reads_the_same_orders_from_the_topic_and_over_jdbc(tmp_path: Path) -> None:
    pytest.importorskip("pyspark")
    doc = _bench(tmp_path, "--spark-orders", "2000", "--cases", "source_read,jdbc_read", "spark", timeout=290)

    scenario = doc["scenarios"]["spark"]
    if scenario["status"] == "unavailable":
        pytest.skip(scenario["reason"])
    assert scenario["status"] == "ok", scenario
    assert set(scenario["cases"]) == {"source_read", "jdbc_read"}  # --cases left the job's fresh-process run out
    for name, case in scenario["cases"].items():
        assert case["unit"] == "rows/s" and len(case["runs"]) == 2, name
        assert all(run["items"] == 2000 for run in case["runs"]), (name, case["runs"])
    assert scenario["cases"]["source_read"]["vs_jdbc"] > 0
    assert scenario["info"]["reads_agree"] is True and scenario["info"]["order_topic"]["messages"] == 2000
