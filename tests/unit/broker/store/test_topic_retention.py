"""A topic's own retention over a real store on a fake clock: each queue's earliest retained offset, and what a topic
keeps of the shared log (``TopicRetention.apply``)."""

from __future__ import annotations

from pathlib import Path

from halfmq.broker.store.message_store import MessageStore, PutItem, StoreConfig
from halfmq.broker.store.topic_retention import TopicRetention
from tests.support.fake_clock import FakeClock

HOUR_MS = 3_600_000


def _store(path: Path, clock: FakeClock) -> MessageStore:
    return MessageStore(StoreConfig(data_dir=path, segment_bytes=4096, checkpoint_interval=60), clock=clock)


def test_a_topic_shorter_than_the_broker_hides_its_old_messages_and_the_others_keep_theirs(tmp_path: Path) -> None:
    clock = FakeClock(1000.0)
    store = _store(tmp_path, clock)
    try:
        store.create_topic("SHORT", 1, retention_ms=10_000)
        store.create_topic("PLAIN", 1)
        for _ in range(3):
            store.put([PutItem("SHORT", 0, b"old"), PutItem("PLAIN", 0, b"old")])
        clock.advance(20)
        store.put([PutItem("SHORT", 0, b"new")])
        kept = TopicRetention(store, 7 * 24 * HOUR_MS).apply(int(clock() * 1000))
        assert store.reads.queue_range("SHORT", 0) == (3, 4)
        assert [m.body for m in store.reads.read_queue("SHORT", 0, 0, 10)] == [b"new"]
        assert store.reads.queue_range("PLAIN", 0) == (0, 3)  # no limit of its own: the broker's segments decide
        assert kept == [store.reads.commit_log_offset_at("SHORT", 0, 3)]
    finally:
        store.close()


def test_a_topic_longer_than_the_broker_keeps_its_first_message_within_its_limit(tmp_path: Path) -> None:
    clock = FakeClock(1000.0)
    store = _store(tmp_path, clock)
    try:
        store.create_topic("LONG", 1, retention_ms=48 * HOUR_MS)
        store.put([PutItem("LONG", 0, b"a")])
        clock.advance(30 * 3600)  # past the broker's day, within the topic's two
        retention = TopicRetention(store, 24 * HOUR_MS)
        assert retention.apply(int(clock() * 1000)) == [store.reads.commit_log_offset_at("LONG", 0, 0)]
        clock.advance(20 * 3600)  # past its own: hidden, and nothing kept any more
        assert retention.apply(int(clock() * 1000)) == []
        assert store.reads.queue_range("LONG", 0) == (1, 1)
    finally:
        store.close()


def test_a_bytes_limit_keeps_each_queues_newest_entries_counting_only_what_was_written_since(tmp_path: Path) -> None:
    clock = FakeClock(1000.0)
    store = _store(tmp_path, clock)
    try:
        store.create_topic("SIZED", 2, retention_bytes=1)
        retention = TopicRetention(store, None)
        store.put([PutItem("SIZED", 0, b"x" * 100) for _ in range(4)] + [PutItem("SIZED", 1, b"y")])
        retention.apply(int(clock() * 1000))
        assert store.reads.queue_range("SIZED", 0) == (3, 4)  # the newest always stays
        assert store.reads.queue_range("SIZED", 1) == (0, 1)
        size = store.reads.entry_sizes("SIZED", 0, 3, 1)[0]
        store.topic_writes.set_retention("SIZED", None, 2 * size)
        store.put([PutItem("SIZED", 0, b"x" * 100) for _ in range(3)])
        retention.apply(int(clock() * 1000))
        assert store.reads.queue_range("SIZED", 0) == (5, 7)
    finally:
        store.close()
