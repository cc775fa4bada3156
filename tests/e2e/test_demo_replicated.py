"""End to end with a broker set: `halfmq demo --chaos --replicas 3` kills the *leader* mid-run (the order ->
credit flow across a leader kill) and still checks every guarantee of docs/design.md section 1."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.support.etcd import etcd_binary
from tests.support.processes import ROOT, free_port, free_port_run


@pytest.mark.slow
def test_demo_with_three_replicas_keeps_every_guarantee_when_the_leader_is_killed(tmp_path) -> None:
    etcd_binary()
    report = tmp_path / "report.json"
    argv = [
        sys.executable, "-m", "halfmq.cli.main", "demo", "--orders", "200", "--users", "6", "--chaos", "--replicas", "3",
        "--no-spark", "--data-dir", str(tmp_path / "demo"), "--json", str(report), "--broker-port", str(free_port_run(3)),
        "--order-port", str(free_port()), "--credit-port", str(free_port()), "--etcd-port", str(free_port_run(2)),
    ]
    result = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    data = json.loads(report.read_text())
    assert data["broker_kills"] == 1 and "kill -9 of the leader of the broker set" in result.stdout
    [failover] = data["failovers"]  # who took over, and when: printed and in the report
    assert failover["leader"] != failover["killed"] and failover["seconds"] > 0, failover
    assert f"failover: {failover['killed']} killed, {failover['leader']} leads term" in result.stdout
    assert data["orders"] >= 200 and data["orders"] == data["visible"] == data["credits"]
    names = {c["name"]: c["ok"] for c in data["checks"]}
    assert names and all(names.values()), names
