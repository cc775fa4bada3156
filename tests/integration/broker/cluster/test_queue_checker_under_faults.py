"""Issue 32's queue checker under a nemesis: a real set (etcd + 3 brokers) loses, invents and doubles nothing.

The run itself is ``tests/support/checker_run.py``, in a process of its own inside a network namespace it does not
share with the host (``tests/support/netns.py``: ``unshare -n``, lo up, nodes on 127.0.0.11–13), so the nemesis
(``tests/support/nemesis.py``) can partition nodes with iptables besides kill -9 of the leader or a follower,
SIGSTOP of the leader, kill -9 of etcd and a follower's full disk, sometimes two at once. Where no namespace can
be made, the run goes on without partitions and the test prints why. Writers send numbered values and consumers
receive and ack them during the faults; after the heal the topic is read back from the leader and every node's
commit log is compared byte for byte. ``tests/support/queue_checker.py`` counts lost, unexpected, duplicated
(stored twice, or delivered after its consumer ack was answered) and divergent.

Short by default (HALFMQ_CHECKER_FAULTS=8, about a minute); the long run is on demand:
``HALFMQ_CHECKER_FAULTS=100 pytest -m slow tests/integration/broker/cluster/test_queue_checker_under_faults.py -s``.
HALFMQ_CHECKER_SEED (default 32) chooses the faults, the victims and the pauses; the seed is printed with the counts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from halfmq.client import Producer
from tests.support.broker_set import BrokerSet
from tests.support.etcd import EtcdProcess, etcd_binary
from tests.support.history import History
from tests.support.nemesis import all_in_sync
from tests.support.netns import unshare_command
from tests.support.processes import ROOT
from tests.support.queue_checker import check
from tests.support.report import report

pytestmark = pytest.mark.slow

FAULTS = int(os.environ.get("HALFMQ_CHECKER_FAULTS", "8"))
SEED = int(os.environ.get("HALFMQ_CHECKER_SEED", "32"))
NODES = ("n1", "n2", "n3")


@pytest.mark.timeout(300 + 60 * FAULTS)
def test_under_seeded_faults_the_set_loses_invents_and_doubles_nothing(tmp_path: Path) -> None:
    etcd_binary()  # skips where etcd is not installed
    argv = [sys.executable, "-m", "tests.support.checker_run", str(tmp_path), "--faults", str(FAULTS), "--seed", str(SEED)]
    in_netns = unshare_command([*argv, "--netns"])
    if isinstance(in_netns, str):
        report(f"\nqueue checker: no partitions in this run ({in_netns})")
    done = subprocess.run(argv if isinstance(in_netns, str) else in_netns, cwd=ROOT, capture_output=True, text=True,
                          timeout=240 + 60 * FAULTS)
    assert done.returncode == 0, f"the checker's run failed:\n{done.stdout[-4000:]}\n{done.stderr[-8000:]}"
    run = json.loads((tmp_path / "run.json").read_text())
    history = History.from_json(run["history"])
    verdict = check(history, {node: (tmp_path / "logs" / node).read_bytes() for node in NODES})
    counts = ", ".join(f"{kind} {n}" for kind, n in sorted(run["counts"].items()))
    report(f"\nqueue checker, seed {run['seed']}, {sum(run['counts'].values())} faults ({counts}; {run['overlapped']} steps with "
           f"two at once) in {run['seconds']}s: "
           f"{verdict.summary()}\nfaults applied: {'; '.join(run['faults'])}")
    assert verdict.acknowledged > 100, verdict.summary()
    assert verdict.counts() == "lost 0, unexpected 0, duplicated 0, divergent 0", verdict.summary()


@pytest.mark.timeout(300)
def test_a_set_keeps_acknowledging_while_a_followers_disk_is_full_and_the_follower_catches_up_once_it_has_room(
        etcd: EtcdProcess, tmp_path: Path) -> None:
    brokers = BrokerSet(etcd, tmp_path, disk_size=256 << 20).start()
    try:
        leader = all_in_sync(brokers)
        follower = min(n for n in brokers.nodes if n != leader)
        brokers.disks[follower].squeeze()
        with Producer(",".join(brokers.urls), timeout=10) as producer:
            statuses = {producer.send("full", f"{i}-" + "x" * 1000).status.value for i in range(300)}
        assert statuses == {"SEND_OK"}
        assert brokers.disks[follower].room < 64 * 1024  # it was still full: the majority acknowledged without it
        brokers.disks[follower].release()
        all_in_sync(brokers, timeout=90)
        brokers.caught_up(timeout=60)
        assert brokers.nodes[follower].alive
        assert brokers.log_bytes(follower) == brokers.log_bytes(leader)
    finally:
        brokers.stop()
