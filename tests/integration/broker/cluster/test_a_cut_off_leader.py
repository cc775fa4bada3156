"""A leader cut off from both followers but still reaching etcd steps down, and the majority side elects (issue 32).

Without it the cut-off leader keeps its lease, so no other node may lead, and with ``ack=quorum`` it can acknowledge
nothing: writes stall for the whole partition. The run is in a network namespace of its own
(tests/support/partition_run.py), where iptables cuts the leader's cgroup from the followers' addresses.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.etcd import etcd_binary
from tests.support.netns import unshare_command
from tests.support.processes import ROOT
from tests.support.report import report

pytestmark = pytest.mark.slow


@pytest.mark.timeout(400)
def test_a_leader_cut_off_from_its_followers_steps_down_and_another_node_takes_quorum_writes(tmp_path: Path) -> None:
    etcd_binary()  # skips where etcd is not installed
    argv = unshare_command([sys.executable, "-m", "tests.support.partition_run", str(tmp_path)])
    if isinstance(argv, str):
        pytest.skip(f"no network namespace with iptables here: {argv}")
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=360)
    assert done.returncode == 0, f"the partition run failed:\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}"
    run = json.loads((tmp_path / "partition.json").read_text())
    report(f"\na cut-off leader: {run['old']} cut from both followers; {run['new']} led and took a quorum write "
           f"{run['took_over_s']} s later (the cut-off node said role={run['old_role_while_cut']}, "
           f"writable={run['old_writable_while_cut']}); after healing {run['leader_after_heal']} leads, all in sync")
    assert run["new"] != run["old"] and run["send_after"] == "SEND_OK"
    assert run["old_role_while_cut"] != "leader" or run["old_writable_while_cut"] is False
