"""A write's consume-queue entries go first and are undone when the log write fails: nothing is left behind."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from halfmq.broker.store.consume_queue import ConsumeQueue
from halfmq.broker.store.consume_queues import ConsumeQueues
from halfmq.broker.store.queue_appends import QueueAppends, QueueBatches
from halfmq.broker.store.store_types import StoreNotWritable
from halfmq.broker.store.write_gate import WriteGate


def full_disk() -> None:
    raise OSError(errno.ENOSPC, "No space left on device")


@pytest.fixture
def queues(tmp_path: Path):
    q = ConsumeQueues(tmp_path / "consumequeue", 100)
    yield q
    q.close()


def two_queues_of_entries(appends: QueueAppends) -> QueueBatches:
    batches: QueueBatches = {}
    appends.batch(batches, ("T", 0))[1].extend([(0, 10, 0), (10, 10, 0)])
    appends.batch(batches, ("T", 1))[1].append((20, 10, 0))
    return batches


def test_entries_land_before_the_log_is_written(queues: ConsumeQueues) -> None:
    appends = QueueAppends(queues, WriteGate())
    seen: list[tuple[int, int]] = []
    appends.append_then(two_queues_of_entries(appends), lambda: seen.append((queues.range("T", 0)[1], queues.range("T", 1)[1])))
    assert seen == [(2, 1)]


def test_a_log_write_the_disk_refuses_undoes_the_entries_of_every_queue(queues: ConsumeQueues) -> None:
    gate = WriteGate()
    appends = QueueAppends(queues, gate)
    appends.append_then({("T", 0): ([0], [(0, 5, 0)])}, lambda: None)
    with pytest.raises(StoreNotWritable, match="cannot append messages: No space left"):
        appends.append_then(two_queues_of_entries(appends), full_disk)
    assert (queues.range("T", 0), queues.range("T", 1)) == ((0, 1), (0, 0))
    assert gate.read_only is None  # the next write may try again
    assert gate.problem is not None


def test_an_undo_the_disk_refuses_too_leaves_the_store_read_only(queues: ConsumeQueues, monkeypatch: pytest.MonkeyPatch) -> None:
    gate = WriteGate()
    appends = QueueAppends(queues, gate)
    batches = two_queues_of_entries(appends)
    monkeypatch.setattr(ConsumeQueue, "truncate_to", lambda self, offset: full_disk())
    with pytest.raises(StoreNotWritable):
        appends.append_then(batches, full_disk)
    assert gate.read_only is not None and gate.read_only.startswith("cannot undo consume-queue entries of a failed write")


def test_a_queue_the_disk_refuses_to_open_is_store_not_writable(tmp_path: Path) -> None:
    (tmp_path / "consumequeue").write_bytes(b"a file where the directory should be")
    appends = QueueAppends(ConsumeQueues(tmp_path / "consumequeue", 100), WriteGate())
    with pytest.raises(StoreNotWritable, match="cannot open consume queue T/0"):
        appends.writable(("T", 0))
