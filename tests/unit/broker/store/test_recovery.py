"""Recovery on the store's parts: it runs once over what a data dir holds and says what it found."""

from __future__ import annotations

import errno
import shutil
from pathlib import Path

import pytest

from halfmq.broker.store.consume_queue import ConsumeQueue
from halfmq.broker.store.store_types import PutItem
from tests.unit.broker.store.store_parts import StoreParts


def written(root: Path, bodies: int, *, checkpoint: bool = True) -> int:
    """A data dir holding ``bodies`` messages in T/0; the log's end."""
    parts = StoreParts(root)
    try:
        parts.topics.put("T", 1)
        _, end = parts.writer().put([PutItem("T", 0, b"%d" % i) for i in range(bodies)])
        if checkpoint:
            parts.checkpoints().take()
        return end
    finally:
        parts.close()


def test_a_clean_data_dir_recovers_with_nothing_to_rebuild(tmp_path: Path) -> None:
    end = written(tmp_path, 5)
    parts = StoreParts(tmp_path)
    try:
        report = parts.recovery().run()
        assert (report.commit_log_end, report.entries_rebuilt, report.entries_trimmed) == (end, 0, 0)
        assert parts.queues.range("T", 0) == (0, 5)
    finally:
        parts.close()


def test_a_queue_whose_files_are_gone_is_refilled_from_the_log_and_the_report_counts_its_entries(tmp_path: Path) -> None:
    written(tmp_path, 7)
    shutil.rmtree(tmp_path / "consumequeue" / "T" / "0")
    parts = StoreParts(tmp_path)
    try:
        report = parts.recovery().run()
        assert report.entries_rebuilt == 7
        assert parts.queues.range("T", 0) == (0, 7)
        assert parts.checkpoints().read() is not None  # checkpointed: the next recovery scans only the tail
    finally:
        parts.close()


def test_lost_topics_are_rebuilt_from_the_consume_queue_directories(tmp_path: Path) -> None:
    written(tmp_path, 2)
    (tmp_path / "topics.json").unlink()
    parts = StoreParts(tmp_path)
    try:
        parts.recovery().run()
        topic = parts.topics.get("T")
        assert topic is not None and topic.queues == 1
    finally:
        parts.close()


def test_a_rebuild_the_disk_refuses_leaves_the_store_read_only_and_lowers_no_consumer_offset(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    written(tmp_path, 3, checkpoint=False)
    parts = StoreParts(tmp_path)
    parts.offsets.commit("g", "T", 0, 3)
    shutil.rmtree(tmp_path / "consumequeue" / "T" / "0")

    def full(self: ConsumeQueue, commit_log_offset: int, size: int, tag_hash: int) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(ConsumeQueue, "append", full)
    try:
        report = parts.recovery().run()
        assert report.entries_rebuilt == 0
        assert parts.gate.read_only is not None and parts.gate.read_only.startswith("recovery could not rebuild the consume queues")
        assert parts.offsets.get("g", "T", 0) == 3  # a half-rebuilt queue's end would have lowered it for good
    finally:
        parts.close()
