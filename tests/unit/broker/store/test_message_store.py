from __future__ import annotations

import logging
import shutil
import threading
from pathlib import Path

import pytest

from halfmq.broker.store.commit_log import CorruptLogError
from halfmq.broker.store.damaged_records import DamagedRecordError
from halfmq.broker.store.data_lock import DataDirLocked
from halfmq.broker.store.message_store import MessageStore, PutItem, StoreConfig
from halfmq.broker.store.record import HEADER_SIZE


def open_store(path: Path, **kw) -> MessageStore:
    return MessageStore(StoreConfig(path, **{"segment_bytes": 4096, "consume_queue_entries": 16, **kw}))


def send(store: MessageStore, topic: str, qid: int, body: bytes, **props: str):
    results, end = store.put([PutItem(topic, qid, body, dict(props))])
    store.wait_flushed(end).result(5)
    return results[0]


@pytest.fixture
def store(tmp_path: Path):
    s = open_store(tmp_path)
    s.create_topic("T", 2)
    yield s
    s.close()


def test_appended_messages_read_back_in_queue_order(store: MessageStore) -> None:
    for i in range(10):
        send(store, "T", i % 2, f"m{i}".encode(), UNIQ_KEY=str(i))
    got = store.reads.read_queue("T", 1, 0, 100)
    assert [m.body for m in got] == [f"m{i}".encode() for i in range(1, 10, 2)]
    assert [m.queue_offset for m in got] == list(range(5))
    assert got[2].properties == {"UNIQ_KEY": "5"}


def test_log_rolls_over_into_segments_named_by_start_offset(store: MessageStore, tmp_path: Path) -> None:
    for _ in range(100):
        send(store, "T", 0, b"x" * 200)
    names = sorted(p.name for p in (tmp_path / "commitlog").iterdir())
    assert len(names) > 5
    assert names[0] == "0" * 20
    assert all(len(n) == 20 for n in names)
    assert [int(n) for n in names] == store.commit_log.segment_bases()
    assert [m.body for m in store.reads.read_queue("T", 0, 0, 1000)] == [b"x" * 200] * 100


def test_write_group_gets_consecutive_queue_offsets_and_one_end(store: MessageStore) -> None:
    results, end = store.put([PutItem("T", 0, b"a"), PutItem("T", 0, b"b"), PutItem("T", 1, b"c")])
    assert [(r.queue_id, r.queue_offset) for r in results] == [(0, 0), (0, 1), (1, 0)]
    assert end == results[-1].commit_log_offset + results[-1].size


def test_many_appends_share_fsyncs(store: MessageStore) -> None:
    ends = [store.put([PutItem("T", 0, b"x")])[1] for _ in range(200)]
    futures = [store.wait_flushed(e) for e in ends]
    for f in futures:
        f.result(5)
    assert store.flush_count < 200


def test_store_reopens_with_everything_readable(tmp_path: Path) -> None:
    s = open_store(tmp_path)
    s.create_topic("T", 2)
    for i in range(50):
        send(s, "T", 0, str(i).encode())
    s.close()
    s = open_store(tmp_path)
    try:
        assert s.reads.queue_range("T", 0) == (0, 50)
        assert s.reads.get("T", 0, 49).body == b"49"
        assert s.topic("T").queues == 2
    finally:
        s.close()


def test_torn_tail_is_truncated_to_last_valid_record(tmp_path: Path) -> None:
    s = open_store(tmp_path, segment_bytes=1 << 20)
    s.create_topic("T", 1)
    for i in range(5):
        send(s, "T", 0, str(i).encode())
    end = s.commit_log.end_offset
    s.close()
    seg = tmp_path / "commitlog" / ("0" * 20)
    data = seg.read_bytes()
    seg.write_bytes(data + data[-40:-10])  # half a record's worth of bytes past the end
    s = open_store(tmp_path, segment_bytes=1 << 20)
    try:
        assert s.commit_log.end_offset == end
        assert s.reads.queue_range("T", 0) == (0, 5)
        send(s, "T", 0, b"after")
        assert [m.body for m in s.reads.read_queue("T", 0, 0, 10)][-1] == b"after"
    finally:
        s.close()


def test_torn_last_record_is_dropped_with_its_queue_entry(tmp_path: Path) -> None:
    s = open_store(tmp_path, segment_bytes=1 << 20)
    s.create_topic("T", 1)
    for i in range(5):
        send(s, "T", 0, b"body-%d" % i)
    s.close()
    seg = tmp_path / "commitlog" / ("0" * 20)
    seg.write_bytes(seg.read_bytes()[:-3])
    s = open_store(tmp_path, segment_bytes=1 << 20)
    try:
        assert s.reads.queue_range("T", 0) == (0, 4)
        assert [m.body for m in s.reads.read_queue("T", 0, 0, 10)] == [b"body-%d" % i for i in range(4)]
    finally:
        s.close()


def test_incomplete_write_group_is_dropped_whole(tmp_path: Path) -> None:
    s = open_store(tmp_path, segment_bytes=1 << 20)
    s.create_topic("T", 1)
    send(s, "T", 0, b"before")
    results, end = s.put([PutItem("T", 0, b"g1"), PutItem("T", 0, b"g2"), PutItem("T", 0, b"g3")])
    s.wait_flushed(end).result(5)
    s.close()
    seg = tmp_path / "commitlog" / ("0" * 20)
    seg.write_bytes(seg.read_bytes()[: results[2].commit_log_offset + 5])  # last record of the group torn
    s = open_store(tmp_path, segment_bytes=1 << 20)
    try:
        assert [m.body for m in s.reads.read_queue("T", 0, 0, 10)] == [b"before"]
        assert s.commit_log.end_offset == results[0].commit_log_offset
    finally:
        s.close()


def test_corrupted_record_in_the_middle_is_reported_not_skipped(tmp_path: Path) -> None:
    s = open_store(tmp_path, segment_bytes=1 << 20)
    s.create_topic("T", 1)
    results = [send(s, "T", 0, b"payload-%d" % i) for i in range(5)]
    s.close()
    (tmp_path / "checkpoint.json").unlink()  # force a scan over the damaged record
    seg = tmp_path / "commitlog" / ("0" * 20)
    data = bytearray(seg.read_bytes())
    data[results[2].commit_log_offset + HEADER_SIZE + 3] ^= 0xFF
    seg.write_bytes(bytes(data))
    with pytest.raises(CorruptLogError, match=str(results[2].commit_log_offset)):
        open_store(tmp_path, segment_bytes=1 << 20)
    assert seg.stat().st_size == len(data)  # nothing truncated


def test_crc_detects_a_flipped_bit(tmp_path: Path) -> None:
    s = open_store(tmp_path, segment_bytes=1 << 20)
    s.create_topic("T", 1)
    r = send(s, "T", 0, b"abc")
    s.close()
    seg = tmp_path / "commitlog" / ("0" * 20)
    data = bytearray(seg.read_bytes())
    data[r.commit_log_offset + r.size - 1] ^= 0x01
    seg.write_bytes(bytes(data))
    from halfmq.broker.store.record import RecordError, decode

    with pytest.raises(RecordError, match="crc"):
        decode(bytes(data), r.commit_log_offset)


@pytest.mark.parametrize("damage", ["delete", "truncate"])
def test_consume_queue_is_rebuilt_from_the_commit_log(tmp_path: Path, damage: str) -> None:
    s = open_store(tmp_path)
    s.create_topic("T", 2)
    for i in range(40):
        send(s, "T", i % 2, str(i).encode())
    s.close()
    qdir = tmp_path / "consumequeue" / "T" / "1"
    if damage == "delete":
        shutil.rmtree(qdir)
    else:
        files = sorted(qdir.iterdir())
        for extra in files[1:]:
            extra.unlink()
        files[0].write_bytes(files[0].read_bytes()[:5 * 20 + 7])
    s = open_store(tmp_path)
    try:
        assert s.reads.queue_range("T", 1) == (0, 20)
        assert [m.body for m in s.reads.read_queue("T", 1, 0, 100)] == [str(i).encode() for i in range(1, 40, 2)]
        assert s.recovery.entries_rebuilt >= 15
    finally:
        s.close()


def test_second_store_on_the_same_directory_is_refused(store: MessageStore, tmp_path: Path) -> None:
    with pytest.raises(DataDirLocked, match="in use"):
        open_store(tmp_path)


def test_consumer_offsets_survive_reopen(tmp_path: Path) -> None:
    s = open_store(tmp_path)
    s.create_topic("T", 2)
    for _ in range(8):
        send(s, "T", 1, b"m")
    s.offsets.commit("g", "T", 1, 7)
    s.close()
    s = open_store(tmp_path)
    try:
        assert s.offsets.get("g", "T", 1) == 7
    finally:
        s.close()


def test_fits_is_exact_at_the_segment_size_even_with_multibyte_properties(store: MessageStore) -> None:
    props = {"NOTE": "é" * 100}  # 200 UTF-8 bytes: the quick bound counts them as 400
    exact = HEADER_SIZE + len("T") + len(b"NOTE\x01" + "é".encode() * 100 + b"\x02")
    filler = 4096 - exact
    assert store.fits([PutItem("T", 0, b"x" * filler, props)])
    assert not store.fits([PutItem("T", 0, b"x" * (filler + 1), props)])
    assert store.fits([PutItem("T", 0, b"x" * 10)])


@pytest.mark.parametrize("damage", ["delete_first", "delete_middle", "shorten_middle", "empty_middle"])
def test_any_missing_or_short_consume_queue_file_is_rebuilt_from_the_commit_log(tmp_path: Path, damage: str) -> None:
    s = open_store(tmp_path, segment_bytes=1 << 20)  # 16 entries a consume-queue file
    s.create_topic("T", 2)
    for i in range(120):
        send(s, "T", i % 2, str(i).encode())
    s.close()
    files = sorted((tmp_path / "consumequeue" / "T" / "1").iterdir())
    assert len(files) == 4
    if damage == "delete_first":
        files[0].unlink()
    elif damage == "delete_middle":
        files[1].unlink()
    elif damage == "shorten_middle":
        files[1].write_bytes(files[1].read_bytes()[: 7 * 20])
    else:
        files[2].write_bytes(b"")
    s = open_store(tmp_path, segment_bytes=1 << 20)
    try:
        assert s.reads.queue_range("T", 1) == (0, 60)
        got = s.reads.read_queue("T", 1, 0, 100)
        assert [m.body for m in got] == [str(i).encode() for i in range(1, 120, 2)]
        assert [m.queue_offset for m in got] == list(range(60))
        assert s.reads.read_queue("T", 0, 0, 100)[-1].body == b"118"
    finally:
        s.close()


def tear_tail(data_dir: Path, at: int) -> None:
    """Lose the commit log from ``at`` on, as a power loss before an fsync would."""
    segments = sorted((data_dir / "commitlog").iterdir())
    last = segments[-1]
    last.write_bytes(last.read_bytes()[: at - int(last.name)])


def test_offsets_beyond_a_lost_tail_are_clamped_to_what_was_recovered(tmp_path: Path) -> None:
    s = open_store(tmp_path, segment_bytes=1 << 20)
    s.create_topic("T", 2)
    results = [send(s, "T", 0, b"m%d" % i) for i in range(5)]
    send(s, "T", 1, b"other")
    s.offsets.commit("caught-up", "T", 0, 5)
    s.offsets.commit("caught-up", "T", 1, 1)
    s.offsets.commit("behind", "T", 0, 2)
    s.offsets.commit("gone", "NO_SUCH_TOPIC", 0, 4)
    s.close()
    tear_tail(tmp_path, results[3].commit_log_offset)  # m3, m4 and "other" are lost
    s = open_store(tmp_path, segment_bytes=1 << 20)
    try:
        assert s.reads.queue_range("T", 0) == (0, 3)
        assert s.offsets.get("caught-up", "T", 0) == 3
        assert s.offsets.get("caught-up", "T", 1) == 0
        assert s.offsets.get("behind", "T", 0) == 2
        assert s.offsets.get("gone", "NO_SUCH_TOPIC", 0) == 0
    finally:
        s.close()
    s = open_store(tmp_path, segment_bytes=1 << 20)  # and the clamp is durable
    try:
        assert s.offsets.get("caught-up", "T", 0) == 3
    finally:
        s.close()


def damage_body(data_dir: Path, result) -> None:
    """Flip a bit in a stored record's body (behind the checkpoint: recovery does not look there)."""
    seg = next(p for p in sorted((data_dir / "commitlog").iterdir(), reverse=True) if int(p.name) <= result.commit_log_offset)
    data = bytearray(seg.read_bytes())
    data[result.commit_log_offset - int(seg.name) + result.size - 1] ^= 0x10
    seg.write_bytes(bytes(data))


def test_a_damaged_record_behind_the_checkpoint_is_skipped_and_reported_once(tmp_path: Path, caplog) -> None:
    s = open_store(tmp_path, segment_bytes=1 << 20)
    s.create_topic("T", 1)
    results = [send(s, "T", 0, b"m%d" % i) for i in range(5)]
    s.close()
    damage_body(tmp_path, results[2])
    s = open_store(tmp_path, segment_bytes=1 << 20)
    try:
        assert [m.body for m in s.reads.read_queue("T", 0, 0, 10)] == [b"m0", b"m1", b"m3", b"m4"]
        entries = s.reads.read_entries("T", 0, 1, 3)
        assert [type(e).__name__ for e in entries] == ["StoredMessage", "DamagedEntry", "StoredMessage"]
        assert (entries[1].queue_offset, entries[1].commit_log_offset) == (2, results[2].commit_log_offset)
        assert s.reads.get("T", 0, 2) is None
        with pytest.raises(DamagedRecordError, match=str(results[2].commit_log_offset)):
            s.reads.read_at(results[2].commit_log_offset)
        assert s.damaged.count == 1
        assert sum("damaged" in r.getMessage() for r in caplog.records if r.levelname == "ERROR") == 1
    finally:
        s.close()


def test_a_consume_queue_entry_pointing_at_another_record_reads_as_damaged(tmp_path: Path) -> None:
    s = open_store(tmp_path, segment_bytes=1 << 20)
    s.create_topic("T", 1)
    results = [send(s, "T", 0, b"m%d" % i) for i in range(3)]
    s.close()
    cq = tmp_path / "consumequeue" / "T" / "0" / ("0" * 20)
    data = bytearray(cq.read_bytes())
    data[20:28] = results[0].commit_log_offset.to_bytes(8, "little")  # entry 1 now points at record 0
    cq.write_bytes(bytes(data))
    s = open_store(tmp_path, segment_bytes=1 << 20)
    try:
        assert [m.body for m in s.reads.read_queue("T", 0, 0, 10)] == [b"m0", b"m2"]
        assert s.damaged.count == 1
    finally:
        s.close()


def test_a_consume_queue_rebuilt_through_a_damaged_record_keeps_its_offsets_and_reports_it(tmp_path: Path) -> None:
    s = open_store(tmp_path, segment_bytes=1 << 20)
    s.create_topic("T", 2)
    results = [send(s, "T", i % 2, b"m%02d" % i) for i in range(40)]
    s.close()
    damage_body(tmp_path, results[10])  # queue 0, offset 5: behind the checkpoint
    shutil.rmtree(tmp_path / "consumequeue" / "T" / "0")
    s = open_store(tmp_path, segment_bytes=1 << 20)
    try:
        assert s.reads.queue_range("T", 0) == (0, 20)
        entries = s.reads.read_entries("T", 0, 0, 100)
        assert [e.queue_offset for e in entries] == list(range(20))
        assert [e.body for e in entries if e.queue_offset != 5] == [b"m%02d" % i for i in range(0, 40, 2) if i != 10]
        assert type(entries[5]).__name__ == "DamagedEntry"
        assert s.reads.read_queue("T", 1, 0, 100)[-1].body == b"m39"
    finally:
        s.close()


def test_checkpoints_taken_at_once_from_two_threads_never_collide_on_the_checkpoint_file(
        store: MessageStore, caplog: pytest.LogCaptureFixture) -> None:
    """A follower's tail cut checkpoints from the replication thread while the periodic checkpoint runs: both wrote
    ``checkpoint.json.tmp`` and one was refused with "No such file" (seen in the broker-set tests, issue 30)."""
    send(store, "T", 0, b"x")
    threads = [threading.Thread(target=lambda: [store.checkpoint() for _ in range(300)]) for _ in range(2)]
    with caplog.at_level(logging.WARNING, logger="halfmq.broker.store"):
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert [r.getMessage() for r in caplog.records] == []
