"""The log start: recorded before anything is deleted, followed by the consume queues and the key index, kept across a restart."""

from __future__ import annotations

from pathlib import Path

import pytest

from halfmq.broker.store.log_start import READY, STAGING, begin_at, read_log_start, write_log_start
from halfmq.broker.store.message_store import MessageStore, PutItem, StoreConfig

KEY = "UNIQ_KEY"


def open_store(path: Path) -> MessageStore:
    return MessageStore(StoreConfig(path, segment_bytes=4096, consume_queue_entries=16, index_slots=64, index_entries=32))


def fill(store: MessageStore, n: int = 80) -> list[int]:
    """``n`` messages of ~600 bytes over two queues, each with its own key; their log offsets."""
    offsets = []
    for i in range(n):
        results, _ = store.put([PutItem("T", i % 2, b"x" * 500, {KEY: f"key-{i}"})])
        offsets.append(results[0].commit_log_offset)
    return offsets


def test_advancing_the_log_start_deletes_the_segments_queue_files_and_index_files_below_it(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    try:
        offsets = fill(store)
        index_files = len(list((tmp_path / "index").glob("0*")))
        start = store.commit_log.segment_bases()[-3]
        deleted = store.log_start.advance(start)
        assert store.commit_log.min_offset == store.log_start.offset == read_log_start(tmp_path) == start
        assert {p.parent.name for p in deleted} >= {"commitlog", "0", "1", "index"}
        assert len(list((tmp_path / "index").glob("0*"))) < index_files
        for qid in (0, 1):
            low, high = store.reads.queue_range("T", qid)
            assert store.reads.read_queue("T", qid, 0, 1)[0].commit_log_offset >= start  # an offset below reads from the start
            assert store.reads.get("T", qid, low - 1) is None and high == 40
        kept = [i for i, at in enumerate(offsets) if at >= start]
        assert [m.properties[KEY] for m in store.keys.query("T", f"key-{kept[0]}")] == [f"key-{kept[0]}"]
        assert store.keys.query("T", "key-0") == []  # its record is gone: a lookup finds nothing, never an error
        assert not store.damaged.count
    finally:
        store.close()


def test_a_queue_whose_every_entry_is_below_the_log_start_keeps_counting_from_where_it_was(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    try:
        fill(store)
        store.put([PutItem("FILLER", 0, b"y" * 3000)])
        store.put([PutItem("FILLER", 0, b"y" * 3000)])
        store.log_start.advance(store.commit_log.segment_bases()[-1])
        assert store.reads.queue_range("T", 0) == (40, 40)
        results, _ = store.put([PutItem("T", 0, b"after")])
        assert results[0].queue_offset == 40
    finally:
        store.close()


def test_a_restart_keeps_the_log_start_and_each_queues_earliest_offset(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    fill(store)
    store.log_start.advance(store.commit_log.segment_bases()[3])
    ranges = [store.reads.queue_range("T", q) for q in (0, 1)]
    store.close()
    again = open_store(tmp_path)
    try:
        assert [again.reads.queue_range("T", q) for q in (0, 1)] == ranges
        assert again.recovery.entries_rebuilt == 0
    finally:
        again.close()


def test_a_crash_between_recording_the_start_and_deleting_leaves_segments_the_next_open_deletes(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    fill(store)
    start = store.commit_log.segment_bases()[3]
    store.close()
    write_log_start(tmp_path, start)  # recorded; the process died before it deleted anything
    again = open_store(tmp_path)
    try:
        assert again.commit_log.min_offset == again.log_start.offset == start
        assert min(int(p.name) for p in (tmp_path / "commitlog").iterdir()) == start
        assert all(again.reads.read_queue("T", q, 0, 1)[0].commit_log_offset >= start for q in (0, 1))
    finally:
        again.close()


def test_the_log_start_never_moves_back(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    try:
        fill(store)
        start = store.commit_log.segment_bases()[3]
        store.log_start.advance(start)
        assert store.log_start.advance(store.commit_log.segment_bases()[0] - 1) == []
        assert store.log_start.offset == read_log_start(tmp_path) == start
    finally:
        store.close()


def _copy_log(leader: MessageStore, follower: MessageStore, start: int) -> None:
    """The leader's log from ``start``, a segment per append, as its fetch answers send it."""
    stops = [b for b in leader.commit_log.segment_bases() if b > start] + [leader.commit_log.end_offset]
    for stop in stops:
        if stop > start:
            follower.append_replicated(leader.commit_log.read(start, stop - start), start)
            start = stop


def test_a_data_dir_begun_at_the_leaders_log_start_holds_its_bytes_at_its_offsets_and_queue_offsets_across_a_restart(
        tmp_path: Path) -> None:
    leader = open_store(tmp_path / "leader")
    follower = open_store(tmp_path / "follower")
    follower.put([PutItem("OLD", 0, b"what this node had before")])
    follower.close()
    try:
        fill(leader)
        start = leader.commit_log.segment_bases()[-3]
        leader.log_start.advance(start)
        (tmp_path / "follower" / "received").write_bytes(b"the leader's snapshot")
        begin_at(tmp_path / "follower", start, tmp_path / "follower" / "received")
        follower = open_store(tmp_path / "follower")
        assert (follower.commit_log.min_offset, follower.commit_log.end_offset, follower.log_start.offset) == (start, start, start)
        _copy_log(leader, follower, start)
        for qid in (0, 1):
            assert follower.reads.queue_range("T", qid) == leader.reads.queue_range("T", qid)
            low = leader.reads.queue_range("T", qid)[0]
            assert [e.commit_log_offset for e in follower.reads.read_queue("T", qid, low, 40)] == \
                   [e.commit_log_offset for e in leader.reads.read_queue("T", qid, low, 40)]
        assert follower.reads.queue_range("OLD", 0) == (0, 0)  # what the old log held is gone with it
        follower.close()
        follower = open_store(tmp_path / "follower")  # the padded first queue files are the leader's layout: kept
        assert [follower.reads.queue_range("T", q) for q in (0, 1)] == [leader.reads.queue_range("T", q) for q in (0, 1)]
        leader_next, _ = leader.put([PutItem("T", 0, b"next")])
        _copy_log(leader, follower, follower.commit_log.end_offset)
        assert follower.reads.queue_range("T", 0)[1] == leader_next[0].queue_offset + 1
    finally:
        leader.close()
        follower.close()


class Crash(Exception):
    """Where a test stops ``begin_at``, as a kill -9 would: what is on disk stays as it is."""


STEPS = ["staged", "ready", "old-derived-removed", "moved term-history.json", "moved commitlog",
         "moved state-snapshot.json", "moved log_start.json"]


@pytest.mark.parametrize("step", STEPS)
def test_a_crash_at_any_step_of_beginning_at_the_leaders_log_start_leaves_the_old_data_dir_or_the_new_one_whole(
        tmp_path: Path, step: str) -> None:
    root = tmp_path / "follower"
    leader = open_store(tmp_path / "leader")
    follower = open_store(root)
    follower.put([PutItem("OLD", 0, b"what this node had before")])
    follower.close()
    (root / "state-snapshot.json").write_bytes(b"its own snapshot")
    (root / "term-history.json").write_bytes(b"its own history")
    try:
        fill(leader)
        start = leader.commit_log.segment_bases()[-3]
        leader.log_start.advance(start)
        (root / "received").write_bytes(b"the leader's snapshot")

        def crash_at(reached: str) -> None:
            if reached == step:
                raise Crash(reached)

        with pytest.raises(Crash):
            begin_at(root, start, root / "received", {"term-history.json": b"the leader's history"}, crash_at)
        follower = open_store(root)  # the restart: the store's open finishes it, or rolls it back
        assert not (root / STAGING).exists() and not (root / READY).exists()
        if step == "staged":  # not yet durable whole: the old data dir, untouched (the node takes the snapshot again)
            assert follower.reads.queue_range("OLD", 0) == (0, 1) and follower.log_start.offset == 0
            assert (root / "state-snapshot.json").read_bytes() == b"its own snapshot"
            assert (root / "term-history.json").read_bytes() == b"its own history"
            return
        assert (follower.commit_log.min_offset, follower.commit_log.end_offset, follower.log_start.offset) == (start, start, start)
        assert read_log_start(root) == start
        assert follower.reads.queue_range("OLD", 0) == (0, 0)
        assert (root / "state-snapshot.json").read_bytes() == b"the leader's snapshot"
        assert (root / "term-history.json").read_bytes() == b"the leader's history"
        _copy_log(leader, follower, start)  # and it follows from there, at the leader's offsets
        assert [follower.reads.queue_range("T", q) for q in (0, 1)] == [leader.reads.queue_range("T", q) for q in (0, 1)]
        bases = [b for b in leader.commit_log.segment_bases() if b >= start] + [leader.commit_log.end_offset]
        for base, stop in zip(bases, bases[1:], strict=False):  # the leader's bytes at its offsets, segment by segment
            assert follower.commit_log.read(base, stop - base) == leader.commit_log.read(base, stop - base)
    finally:
        leader.close()
        follower.close()
