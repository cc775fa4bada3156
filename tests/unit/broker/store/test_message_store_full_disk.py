"""The store on a real full disk (a small tmpfs): a refused write stores nothing and leaves nothing behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from halfmq.broker.store.message_store import MessageStore, PutItem, StoreConfig, StoreNotWritable
from tests.support.small_disk import SmallDisk

BIG = b"x" * 20_000


def open_store(path: Path) -> MessageStore:
    return MessageStore(StoreConfig(path, segment_bytes=256 * 1024, consume_queue_entries=1024))


def segment_bytes_on_disk(store: MessageStore) -> int:
    return sum(p.stat().st_size for p in store.commit_log.directory.iterdir())


def test_a_write_the_disk_refuses_stores_nothing_and_leaves_no_bytes_behind(small_disk: SmallDisk) -> None:
    store = open_store(small_disk.path / "data")
    try:
        store.create_topic("T", 2)
        store.put([PutItem("T", 0, b"first")])
        end = store.commit_log.end_offset
        small_disk.fill()
        with pytest.raises(StoreNotWritable, match="No space left"):
            store.put([PutItem("T", 0, b"a"), PutItem("T", 1, BIG)])  # both queues' entries fit; the log does not
        assert store.commit_log.end_offset == end
        assert segment_bytes_on_disk(store) == end
        assert (store.reads.queue_range("T", 0), store.reads.queue_range("T", 1)) == ((0, 1), (0, 0))
        small_disk.free()
        [result], _ = store.put([PutItem("T", 1, b"second")])
        assert (result.commit_log_offset, result.queue_offset) == (end, 0)
    finally:
        store.close()
    store = open_store(small_disk.path / "data")
    try:
        assert store.recovery.commit_log_end == segment_bytes_on_disk(store)
        assert [m.body for m in store.reads.read_queue("T", 0, 0, 10)] == [b"first"]
        assert [m.body for m in store.reads.read_queue("T", 1, 0, 10)] == [b"second"]
    finally:
        store.close()


def test_a_topic_the_disk_refuses_does_not_exist_even_in_memory(small_disk: SmallDisk) -> None:
    store = open_store(small_disk.path / "data")
    try:
        small_disk.fill()
        with pytest.raises(StoreNotWritable):
            store.create_topic("NEW", 4)
        assert store.topic("NEW") is None
        small_disk.free()
        assert store.create_topic("NEW", 4).queues == 4
    finally:
        store.close()


def test_consumer_offsets_a_full_disk_refused_are_written_by_a_later_checkpoint(small_disk: SmallDisk) -> None:
    store = open_store(small_disk.path / "data")
    try:
        store.create_topic("T", 1)
        store.put([PutItem("T", 0, b"m")])
        small_disk.fill()
        store.offsets.commit("G", "T", 0, 1)
        store.checkpoint()  # refused: logged, not raised
        small_disk.free()
        store.checkpoint()
    finally:
        store.close()
    store = open_store(small_disk.path / "data")
    try:
        assert store.offsets.get("G", "T", 0) == 1
    finally:
        store.close()
