"""The peers' runners run: each starts its server, measures a short loop, stops it and prints one result.

Real servers, real clients: the peers venv (`halfmq bench peers --setup`) and the Debian servers.
A peer whose venv or server is not installed here is skipped, never faked; in CI (``CI`` set,
where bin/test installs them with ``bin/setup --with-peers``) a missing peer fails instead. The fsync runner needs
only the standard library, so it also runs with this interpreter. Sizes are tiny: this proves the
runners and the result shape, it measures nothing.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from halfmq.bench import peers
from halfmq.bench.peer_command import BY_NAME, VENV, run_one

# peer -> (server binary it needs, result keys that must hold a figure)
NEEDS: dict[str, tuple[str | None, list[tuple[str, ...]]]] = {
    "redis_always": ("redis-server", [("xadd_seq",), ("xadd_c64",), ("consume_group",)]),
    "nats_2_15_syncalways": (str(VENV / "bin" / "nats-server"), [("publish_seq",), ("publish_c64",), ("consume_pull_ack",)]),
    "nats_jetstream_r3": (str(VENV / "bin" / "nats-server"), [("publish_seq",), ("publish_c64",)]),
    "rabbitmq_classic": ("rabbitmq-server", [("confirm_c64",), ("tx_seq",), ("tx_c64",), ("consume",)]),
}


def _runs(result: dict, keys: tuple[str, ...]) -> list[dict]:
    node = result
    for key in keys:
        node = node[key]
    return node.get("runs", [])


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_the_fsync_runner_writes_a_result_the_report_reads(tmp_path: Path) -> None:
    venv = Path(sys.executable).parent.parent  # the runner needs nothing beyond the standard library
    assert run_one(BY_NAME["fsync"], tmp_path, seconds=0.3, reps=1, venv=venv) == 0, (tmp_path / "fsync.err").read_text()
    loaded = peers.load(tmp_path)
    for case in ("fsync_each", "fsync_group64"):
        figure = peers.figure(loaded, "fsync", case)
        assert figure is not None and figure.median > 0, loaded
    assert "fsync_bench.py" in peers.commands(tmp_path)["fsync"]


@pytest.mark.slow
@pytest.mark.timeout(240)
@pytest.mark.parametrize("name", sorted(NEEDS))
def test_a_broker_runner_measures_through_its_own_client_without_errors(name: str, tmp_path: Path) -> None:
    server, keys = NEEDS[name]
    missing = None
    if not (VENV / "bin" / "python").exists():
        missing = f"no peers venv at {VENV} (halfmq bench peers --setup)"
    elif server and not (Path(server).exists() or shutil.which(server)):
        missing = f"{server} is not installed"
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"{missing}: bin/test installs the peers in CI")
        pytest.skip(missing)
    assert run_one(BY_NAME[name], tmp_path, seconds=0.5, reps=1) == 0, (tmp_path / f"{name}.err").read_text()[-3000:]
    result = peers.load(tmp_path)[name]
    for path in keys:
        figure = peers.figure({name: result}, name, *path)
        assert figure is not None and figure.median > 0, (path, result)
        assert all(run.get("errors", 0) == 0 for run in _runs(result, path)), (path, result)
    if name == "nats_jetstream_r3":
        assert result["replicas_seen"] == 3
