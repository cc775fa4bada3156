"""A follower's store takes a leader's log bytes unchanged: same offsets, same segments, same queues."""

from __future__ import annotations

from pathlib import Path

import pytest

from halfmq.broker.store.message_store import MessageStore, PutItem, ReplicationMismatch, StoreConfig


def _store(path: Path) -> MessageStore:
    return MessageStore(StoreConfig(data_dir=path, segment_bytes=4096, checkpoint_interval=60))


def _log_bytes(store: MessageStore) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((store.config.data_dir / "commitlog").iterdir())}


def test_replicated_bytes_in_odd_chunks_give_the_same_segments_and_queues(tmp_path: Path) -> None:
    leader, follower = _store(tmp_path / "leader"), _store(tmp_path / "follower")
    try:
        for i in range(60):
            leader.put([PutItem("orders", i % 3, f"order {i}".encode() * 20, {"UNIQ_KEY": str(i)}) for _ in range(1 + i % 2)])
        end = leader.commit_log.end_offset
        assert leader.commit_log.segment_count > 3
        pos = 0
        while pos < end:  # 1000-byte pieces: groups and segments are cut anywhere, as a fetch may
            base = max(b for b in leader.commit_log.segment_bases() if b <= pos)
            seg_end = min(end, next((b for b in leader.commit_log.segment_bases() if b > pos), end))
            chunk = leader.commit_log.read(pos, min(1000, seg_end - pos))
            pos = follower.append_replicated(chunk, pos) if base <= pos else pos
        assert _log_bytes(follower) == _log_bytes(leader)
        for qid in range(3):
            assert follower.queue_range("orders", qid) == leader.queue_range("orders", qid)
            assert [m.body for m in follower.read_queue("orders", qid, 0, 100)] == [m.body for m in leader.read_queue("orders", qid, 0, 100)]
    finally:
        leader.close()
        follower.close()


def test_bytes_that_do_not_continue_the_log_are_refused_and_nothing_is_written(tmp_path: Path) -> None:
    leader, follower = _store(tmp_path / "leader"), _store(tmp_path / "follower")
    try:
        leader.put([PutItem("orders", 0, b"a")])
        _, end = leader.put([PutItem("orders", 0, b"b")])
        second = leader.commit_log.read(end - (end // 2), end // 2)
        with pytest.raises(ReplicationMismatch):
            follower.append_replicated(second, end // 2)
        assert follower.commit_log.end_offset == 0
    finally:
        leader.close()
        follower.close()


def test_truncating_a_divergent_tail_cuts_the_log_and_the_queues(tmp_path: Path) -> None:
    store = _store(tmp_path / "node")
    try:
        _, keep = store.put([PutItem("orders", 0, b"acknowledged")])
        store.put([PutItem("orders", 0, b"divergent")])
        store.truncate_log(keep)
        assert store.commit_log.end_offset == keep
        assert [m.body for m in store.read_queue("orders", 0, 0, 10)] == [b"acknowledged"]
        store.put([PutItem("orders", 0, b"next")])
        assert [m.queue_offset for m in store.read_queue("orders", 0, 0, 10)] == [0, 1]
    finally:
        store.close()
