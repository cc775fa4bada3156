"""End to end: `halfmq demo` starts `halfmq up` as a real process tree, places orders with every fault,
kills the broker with SIGKILL mid-run, waits for credits, runs Spark, and checks docs/design.md section 1."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.support.processes import ROOT, free_port


@pytest.mark.slow
def test_demo_keeps_every_guarantee_through_faults_and_a_broker_kill(tmp_path) -> None:
    report = tmp_path / "report.json"
    argv = [
        sys.executable, "-m", "halfmq.cli.main", "demo", "--orders", "200", "--users", "6", "--chaos",
        "--data-dir", str(tmp_path / "demo"), "--json", str(report),
        "--broker-port", str(free_port()), "--order-port", str(free_port()), "--credit-port", str(free_port()),
    ]
    result = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    data = json.loads(report.read_text())
    assert (tmp_path / "demo" / "auth" / "auth.json").exists(), "the demo's `up` runs with auth on"
    assert data["broker_kills"] == 1
    assert data["placement"].get("rolled back (local transaction failed)") == 5
    assert data["placement"].get("crashed (recovered by restart + check-back)") == 2
    assert data["orders"] >= 200 and data["orders"] == data["visible"] == data["credits"]
    assert data["refunds"] >= 5  # about 5 % of the orders, each credited back after its order
    assert data["spark_points"] == data["points"]
    names = {c["name"]: c["ok"] for c in data["checks"]}
    assert names["credits applied in order per user"]
    for row in ("no delayed message delivered early", "every unpaid order is cancelled, no paid one is"):
        assert names.get(row) is True, names  # each order's payment-due message, decided by its local transaction (H1)
    assert len(names) == 9 and all(names.values()), names
