"""A timer's consume-queue entry holds its due time, the same whether written live, recovered or replicated."""

from __future__ import annotations

import shutil
from pathlib import Path

from halfmq.broker.store.message_store import MessageStore, PutItem, StoreConfig
from halfmq.broker.store.record import tag_hash
from halfmq.broker.store.topics import REAL_QID, REAL_TOPIC, TIMER_OUT_MS, TIMER_TOPIC

DUE = 1_800_000_123_456


def _store(path: Path) -> MessageStore:
    return MessageStore(StoreConfig(data_dir=path, checkpoint_interval=60))


def _codes(store: MessageStore, topic: str, queue_id: int) -> list[int]:
    return store.reads.queue_codes(topic, queue_id, 0, 100)


def _write(store: MessageStore) -> None:
    store.put([PutItem("ORDERS", 0, b"plain", {"UNIQ_KEY": "p", "TAGS": "red"}, tag="red"),
               PutItem(TIMER_TOPIC, 0, b"timed", {"UNIQ_KEY": "t", REAL_TOPIC: "ORDERS", REAL_QID: "0", TIMER_OUT_MS: str(DUE)})])


def test_a_recovered_or_replicated_timer_entry_has_the_same_queue_code_as_the_one_written_live(tmp_path: Path) -> None:
    live = _store(tmp_path / "live")
    _write(live)
    assert _codes(live, TIMER_TOPIC, 0) == [DUE]
    assert _codes(live, "ORDERS", 0) == [tag_hash("red")]
    follower = _store(tmp_path / "follower")
    follower.append_replicated(live.commit_log.read(0, live.commit_log.end_offset), 0)
    assert (_codes(follower, TIMER_TOPIC, 0), _codes(follower, "ORDERS", 0)) == ([DUE], [tag_hash("red")])
    follower.close()
    live.close()
    shutil.rmtree(tmp_path / "live" / "consumequeue")  # recovery rebuilds every entry from the log
    (tmp_path / "live" / "checkpoint.json").unlink()
    recovered = _store(tmp_path / "live")
    try:
        assert (_codes(recovered, TIMER_TOPIC, 0), _codes(recovered, "ORDERS", 0)) == ([DUE], [tag_hash("red")])
    finally:
        recovered.close()
