"""Commit-log recovery with one field of one record damaged: corruption vs. torn tail."""

from __future__ import annotations

from pathlib import Path

import pytest

from halfmq.broker.store.commit_log import CommitLog, CorruptLogError, whole_groups_end
from halfmq.broker.store.message_store import MessageStore, PutItem, StoreConfig
from halfmq.broker.store.record import HEADER_SIZE

SEGMENT = 1 << 20
TOPIC = "T"
PROPS = {"UNIQ_KEY": "key-0001"}

# (field, byte within the record, bit to flip): every field of the layout in record.py.
FIELDS = {
    "size_low_bit": (0, 2),  # the declared size 4 bytes off: a CRC over the wrong bytes
    "size_high_bit": (1, 4),  # +4096: past every later record, nothing valid where it points
    "crc": (5, 0),
    "magic": (8, 3),
    "flags_group_more": (9, 0),
    "queue_id": (11, 1),
    "queue_offset": (15, 0),
    "commit_log_offset": (23, 5),
    "born_timestamp": (31, 7),
    "store_timestamp": (39, 2),
    "topic_len": (47, 0),
    "props_len": (49, 1),
    "topic": (HEADER_SIZE, 0),
    "properties": (HEADER_SIZE + len(TOPIC) + 2, 6),
    "body": (-1, 0),
}


def write_records(directory: Path, count: int = 6) -> list:
    store = MessageStore(StoreConfig(directory, segment_bytes=SEGMENT))
    store.create_topic(TOPIC, 1)
    results = []
    for i in range(count):
        [result], end = store.put([PutItem(TOPIC, 0, b"body-%03d" % i * 10, dict(PROPS))])
        store.wait_flushed(end).result(5)
        results.append(result)
    store.close()
    return results


def flip(segment: Path, offset: int, bit: int) -> None:
    data = bytearray(segment.read_bytes())
    data[offset] ^= 1 << bit
    segment.write_bytes(bytes(data))


def damage(segment: Path, record, field: str) -> int:
    at, bit = FIELDS[field]
    where = record.commit_log_offset + (at if at >= 0 else record.size + at)
    flip(segment, where, bit)
    return where


@pytest.mark.parametrize("field", FIELDS)
def test_damage_followed_by_valid_records_refuses_to_start_and_truncates_nothing(tmp_path: Path, field: str) -> None:
    results = write_records(tmp_path)
    segment = tmp_path / "commitlog" / ("0" * 20)
    damage(segment, results[2], field)
    size = segment.stat().st_size
    log = CommitLog(tmp_path / "commitlog", SEGMENT)
    try:
        with pytest.raises(CorruptLogError) as caught:
            list(log.recover(0))
    finally:
        log.close()
    message = str(caught.value)
    assert "\n" not in message
    assert str(segment) in message and f"offset {results[2].commit_log_offset}" in message
    assert f"next valid record at offset {results[3].commit_log_offset}" in message
    assert f"is damaged: {field.removesuffix('_low_bit').removesuffix('_high_bit').removesuffix('_group_more')} (" in message
    assert segment.stat().st_size == size


@pytest.mark.parametrize("field", FIELDS)
def test_damage_in_the_last_record_is_truncated_as_a_torn_tail(tmp_path: Path, field: str) -> None:
    results = write_records(tmp_path)
    segment = tmp_path / "commitlog" / ("0" * 20)
    damage(segment, results[-1], field)
    log = CommitLog(tmp_path / "commitlog", SEGMENT)
    try:
        survivors = list(log.recover(0))
        assert [r.commit_log_offset for r in survivors] == [r.commit_log_offset for r in results[:-1]]
        assert log.end_offset == results[-1].commit_log_offset
    finally:
        log.close()


def test_a_record_copied_into_a_body_is_not_taken_for_a_valid_record(tmp_path: Path) -> None:
    """Resynchronising after damage requires the record's own offset field to match where it lies."""
    results = write_records(tmp_path, count=2)
    segment = tmp_path / "commitlog" / ("0" * 20)
    first = segment.read_bytes()[: results[0].size]
    store = MessageStore(StoreConfig(tmp_path, segment_bytes=SEGMENT))
    [last], end = store.put([PutItem(TOPIC, 0, first)])  # a whole valid record, but at another offset
    store.wait_flushed(end).result(5)
    store.close()
    flip(segment, last.commit_log_offset + 1, 4)  # the last record's size: the tail is torn
    log = CommitLog(tmp_path / "commitlog", SEGMENT)
    try:
        list(log.recover(0))
        assert log.end_offset == last.commit_log_offset
    finally:
        log.close()


def test_damage_in_a_segment_before_the_last_refuses_to_start(tmp_path: Path) -> None:
    store = MessageStore(StoreConfig(tmp_path, segment_bytes=4096))
    store.create_topic(TOPIC, 1)
    results = []
    for _ in range(60):
        [result], end = store.put([PutItem(TOPIC, 0, b"x" * 200)])
        results.append(result)
    store.wait_flushed(end).result(5)
    store.close()
    segments = sorted((tmp_path / "commitlog").iterdir())
    assert len(segments) > 2
    victim = next(r for r in results if r.commit_log_offset >= int(segments[1].name))  # first record of segment 2
    flip(segments[1], victim.commit_log_offset - int(segments[1].name) + 1, 4)
    log = CommitLog(tmp_path / "commitlog", 4096)
    try:
        with pytest.raises(CorruptLogError, match=segments[1].name):
            list(log.recover(0))
    finally:
        log.close()


def test_a_run_read_for_a_replica_stops_at_the_end_of_its_segment_at_the_given_end_and_at_its_size(tmp_path: Path) -> None:
    store = MessageStore(StoreConfig(tmp_path, segment_bytes=4096))
    store.create_topic(TOPIC, 1)
    ends = []
    for _ in range(40):
        _, end = store.put([PutItem(TOPIC, 0, b"x" * 200)])  # a group each
        ends.append(end)
    store.wait_flushed(end).result(5)
    log = store.commit_log
    second, third = log.segment_bases()[1:3]
    one = ends[1] - ends[0]  # a group's size
    try:
        assert log.read_groups(0, end, 1 << 20) == log.read(0, second)  # the first segment whole, not a byte of the next
        assert log.read_groups(second, end, 1 << 20) == log.read(second, third - second)
        assert log.read_groups(second, end, 3 * one + 10) == log.read(second, 3 * one)
        assert log.read_groups(end - 2 * one, end - one, 1 << 20) == log.read(end - 2 * one, one)
        assert log.read_groups(end, end, 1 << 20) == b""
    finally:
        store.close()


def test_a_run_for_a_replica_ends_at_a_write_groups_end_and_a_group_larger_than_a_run_comes_whole(tmp_path: Path) -> None:
    store = MessageStore(StoreConfig(tmp_path, segment_bytes=1 << 20))
    store.create_topic(TOPIC, 1)
    _, small = store.put([PutItem(TOPIC, 0, b"a" * 1000) for _ in range(3)])
    _, large = store.put([PutItem(TOPIC, 0, b"b" * 100_000) for _ in range(3)])  # one group of ~300 KB
    _, end = store.put([PutItem(TOPIC, 0, b"c" * 10)])
    store.wait_flushed(end).result(5)
    log = store.commit_log
    try:
        assert log.read_groups(0, end, small + 500) == log.read(0, small)  # not the first 500 bytes of the next group
        assert log.read_groups(0, end, 100) == log.read(0, small)  # a group larger than the run: whole, alone
        assert log.read_groups(small, end, 256 * 1024) == log.read(small, large - small)
        assert log.read_groups(0, end, 1 << 20) == log.read(0, end)  # all there is
        assert whole_groups_end(log.read(0, large + 5)) == large
        assert whole_groups_end(log.read(small, 1000)) == 0
    finally:
        store.close()
