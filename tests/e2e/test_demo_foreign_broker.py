"""End to end: `halfmq demo --chaos` with someone else's broker on the demo's default port (issue 30, item 13).

The old demo saw a healthy halfmq on 10911, attached to it, took its pid from /healthz and kill -9'd
it. Now the demo starts its own `up` on free ports, kills only its own broker, and the foreign one
lives on with its data.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from halfmq.cli.processes.child_process import port_taken
from halfmq.cli.up_command import Topology
from tests.support.processes import ROOT, BrokerProcess

DEFAULT_PORT = Topology(Path(".")).broker_port


@pytest.mark.slow
def test_demo_chaos_never_kills_a_broker_it_did_not_start_on_its_default_port(tmp_path: Path) -> None:
    if port_taken("127.0.0.1", DEFAULT_PORT):
        pytest.skip(f"port {DEFAULT_PORT} is held by a process this test did not start")
    foreign = BrokerProcess(tmp_path / "foreign", tmp_path, port=DEFAULT_PORT)
    foreign.start()
    try:
        httpx.post(f"{foreign.url}/v1/topics", json={"name": "MINE", "queues": 1}).raise_for_status()
        report = tmp_path / "report.json"
        argv = [sys.executable, "-m", "halfmq.cli.main", "demo", "--chaos", "--orders", "30", "--users", "2", "--no-spark",
                "--timeout", "90", "--data-dir", str(tmp_path / "demo"), "--json", str(report)]
        result = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=400)
        out = result.stdout + result.stderr
        assert foreign.alive, "the demo killed a broker it did not start:\n" + out[-3000:]
        assert httpx.get(f"{foreign.url}/v1/topics/MINE", timeout=5).status_code == 200
        assert result.returncode == 0, out[-4000:]
        assert f"port {DEFAULT_PORT} (--broker-port) is taken by another process: the demo uses" in out
        data = json.loads(report.read_text())
        assert data["broker_kills"] == 1, "the demo's own broker is the one it kills"
        assert data["orders"] == data["visible"] == data["credits"] and data["orders"] >= 30
    finally:
        foreign.stop()
