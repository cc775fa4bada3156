"""A follower's store takes a leader's log bytes unchanged: same offsets, same segments, same queues."""

from __future__ import annotations

from pathlib import Path

import pytest

from halfmq.broker.store.commit_log import CommitLog
from halfmq.broker.store.consume_queue import ConsumeQueue
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
            assert follower.reads.queue_range("orders", qid) == leader.reads.queue_range("orders", qid)
            assert [m.body for m in follower.reads.read_queue("orders", qid, 0, 100)] == [m.body for m in leader.reads.read_queue("orders", qid, 0, 100)]
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
        assert [m.body for m in store.reads.read_queue("orders", 0, 0, 10)] == [b"acknowledged"]
        store.put([PutItem("orders", 0, b"next")])
        assert [m.queue_offset for m in store.reads.read_queue("orders", 0, 0, 10)] == [0, 1]
    finally:
        store.close()


def test_a_fetch_of_64_single_message_groups_is_appended_with_one_write_call_and_one_consume_queue_append_per_queue(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    leader = MessageStore(StoreConfig(data_dir=tmp_path / "leader", checkpoint_interval=60))
    follower = MessageStore(StoreConfig(data_dir=tmp_path / "follower", checkpoint_interval=60))
    try:
        for i in range(64):
            leader.put([PutItem("orders", i % 4, f"order {i}".encode(), {"UNIQ_KEY": str(i), "TAGS": f"t{i % 2}"}, tag=f"t{i % 2}")])
        writes: list[int] = []
        appends: list[tuple[str, int, int]] = []
        log_write, cq_append = CommitLog.write, ConsumeQueue.append_many
        monkeypatch.setattr(CommitLog, "write", lambda self, blob: writes.append(len(blob)) or log_write(self, blob))
        monkeypatch.setattr(ConsumeQueue, "append_many", lambda self, entries: appends.append(
            (self.topic, self.queue_id, len(entries))) or cq_append(self, entries))
        end = leader.commit_log.end_offset
        assert follower.append_replicated(leader.commit_log.read(0, end), 0) == end
        assert writes == [end]
        assert sorted(appends) == [("orders", q, 16) for q in range(4)]
        assert _log_bytes(follower) == _log_bytes(leader)
        for qid in range(4):
            assert ([(e.commit_log_offset, e.size, e.tag_hash) for e in follower._queues.open("orders", qid).get_range(0, 100)]
                    == [(e.commit_log_offset, e.size, e.tag_hash) for e in leader._queues.open("orders", qid).get_range(0, 100)])
    finally:
        leader.close()
        follower.close()


def test_bytes_across_several_segments_are_appended_in_one_call_with_the_leader_s_segments(tmp_path: Path) -> None:
    leader, follower = _store(tmp_path / "leader"), _store(tmp_path / "follower")
    try:
        for i in range(60):
            leader.put([PutItem("orders", i % 3, f"order {i}".encode() * 20, {"UNIQ_KEY": str(i)}) for _ in range(1 + i % 2)])
        end = leader.commit_log.end_offset
        bases = leader.commit_log.segment_bases()
        assert len(bases) > 3
        whole_log = b"".join(leader.commit_log.read(base, stop - base) for base, stop in zip(bases, [*bases[1:], end], strict=True))
        assert follower.append_replicated(whole_log, 0) == end
        assert _log_bytes(follower) == _log_bytes(leader)
    finally:
        leader.close()
        follower.close()


def test_a_damaged_record_anywhere_in_a_fetch_is_refused_and_nothing_of_the_fetch_is_written(tmp_path: Path) -> None:
    leader, follower = _store(tmp_path / "leader"), _store(tmp_path / "follower")
    try:
        for i in range(10):
            leader.put([PutItem("orders", 0, f"order {i}".encode())])
        data = bytearray(leader.commit_log.read(0, leader.commit_log.end_offset))
        data[-3] ^= 0x10  # in the last record's body
        with pytest.raises(ReplicationMismatch):
            follower.append_replicated(bytes(data), 0)
        assert follower.commit_log.end_offset == 0
        assert follower.reads.queue_range("orders", 0) == (0, 0)
    finally:
        leader.close()
        follower.close()


def test_a_follower_finds_a_replicated_message_by_its_id_and_keys(tmp_path: Path) -> None:
    leader, follower = _store(tmp_path / "leader"), _store(tmp_path / "follower")
    try:
        leader.put([PutItem("orders", 0, b"a", {"UNIQ_KEY": "id-a", "KEYS": "order-1"}), PutItem("orders", 1, b"b", {"KEYS": "order-1"})])
        leader.put([PutItem("orders", 0, b"c", {"TAGS": "x", "UNIQ_KEY": "id-c", "KEYS": "order-1"})])
        end = leader.commit_log.end_offset
        follower.append_replicated(leader.commit_log.read(0, end), 0)
        assert [m.body for m in follower.keys.query("orders", "order-1")] == [b"c", b"b", b"a"]
        assert [m.body for m in follower.keys.query("orders", "id-c")] == [b"c"]
    finally:
        leader.close()
        follower.close()


def test_a_follower_learns_a_topics_own_retention_and_its_changes_from_the_leaders_records(tmp_path: Path) -> None:
    leader, follower = _store(tmp_path / "leader"), _store(tmp_path / "follower")
    try:
        leader.log_topics()
        leader.create_topic("SHORT", 2, retention_ms=60_000)
        follower.append_replicated(leader.commit_log.read(0, leader.commit_log.end_offset), 0)
        learnt = follower.topic("SHORT")
        assert learnt is not None and (learnt.queues, learnt.retention_ms, learnt.retention_bytes) == (2, 60_000, None)
        start = leader.commit_log.end_offset
        leader.topic_writes.set_retention("SHORT", None, 4096)
        follower.append_replicated(leader.commit_log.read(start, leader.commit_log.end_offset - start), start)
        changed = follower.topic("SHORT")
        assert changed is not None and (changed.retention_ms, changed.retention_bytes) == (None, 4096)
    finally:
        leader.close()
        follower.close()
