"""The checkpoint on the store's parts: what it writes, what a read-only store still writes, and its hooks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from halfmq.broker.store.store_types import PutItem
from tests.unit.broker.store.store_parts import StoreParts


@pytest.fixture
def parts(tmp_path: Path):
    p = StoreParts(tmp_path)
    yield p
    p.close()


def append(parts: StoreParts, n: int) -> None:
    parts.writer().put([PutItem("T", 0, b"m") for _ in range(n)])


def test_a_checkpoint_records_how_far_the_log_is_dispatched_and_each_queue_s_length(parts: StoreParts) -> None:
    append(parts, 3)
    parts.offsets.commit("g", "T", 0, 2)
    parts.checkpoints().take()
    written = json.loads((parts.root / "checkpoint.json").read_text())
    assert (written["commit_log_offset"], written["queues"]) == (parts.commit_log.end_offset, {"T/0": 3})
    assert parts.checkpoints().read() == written
    assert json.loads((parts.root / "consumer_offsets.json").read_text())["offsets"] == {"g": {"T": {"0": 2}}}


def test_a_read_only_store_checkpoints_consumer_offsets_only(parts: StoreParts) -> None:
    append(parts, 1)
    parts.gate.stop_writes("recovery could not rebuild the consume queues")
    parts.offsets.commit("g", "T", 0, 1)
    parts.checkpoints().take()
    assert not (parts.root / "checkpoint.json").exists()
    assert json.loads((parts.root / "consumer_offsets.json").read_text())["offsets"] == {"g": {"T": {"0": 1}}}


def test_a_damaged_checkpoint_reads_as_none_so_recovery_scans_the_whole_log(parts: StoreParts) -> None:
    (parts.root / "checkpoint.json").write_text("{not json")
    assert parts.checkpoints().read() is None


def test_a_failing_hook_does_not_stop_the_hooks_after_it(parts: StoreParts) -> None:
    checkpoints = parts.checkpoints()
    ran: list[str] = []

    def refused() -> None:
        ran.append("refused")
        raise OSError(28, "No space left on device")

    checkpoints.add_hook(refused)
    checkpoints.add_hook(lambda: ran.append("next"))
    checkpoints.start(3600)
    checkpoints.stop()  # one last checkpoint, then its hooks
    assert ran == ["refused", "next"]
    assert (parts.root / "checkpoint.json").exists()


def test_dropped_hooks_run_no_more(parts: StoreParts) -> None:
    checkpoints = parts.checkpoints()
    ran: list[str] = []
    checkpoints.add_hook(lambda: ran.append("old timer index"))
    checkpoints.drop_hooks()
    checkpoints.add_hook(lambda: ran.append("new timer index"))
    checkpoints.start(3600)
    checkpoints.stop()
    assert ran == ["new timer index"]
