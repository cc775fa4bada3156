"""`halfmq bench rocketmq --quick`: both clients commit transactions on a real broker and the ratio is reported."""

from __future__ import annotations

from pathlib import Path

import pytest

from halfmq.bench.cli import run_bench
from halfmq.bench.settings import BenchSettings

pytest.importorskip("rocketmq", reason="the rocketmq extra (Apache's rocketmq-python-client)")
pytestmark = pytest.mark.slow


def test_the_rocketmq_scenario_measures_both_clients_without_errors(tmp_path: Path) -> None:
    doc = run_bench(["rocketmq"], BenchSettings.for_mode(True, workdir=tmp_path), with_baselines=False)
    scenario = doc["scenarios"]["rocketmq"]
    assert scenario["status"] == "ok", scenario
    cases = scenario["cases"]
    for name in ("rocketmq_client_c1", "halfmq_sdk_c1", "rocketmq_client_c16", "halfmq_sdk_c16"):
        assert cases[name]["ops_per_s"]["median"] > 0, name
        assert all(run["errors"] == 0 for run in cases[name]["runs"]), cases[name]["runs"]
    assert cases["rocketmq_client_c16"]["rocketmq_to_sdk"] > 0
