"""The full read-only check behind `halfmq broker --verify`."""

from __future__ import annotations

from pathlib import Path

import pytest

from halfmq.broker.store.data_lock import DataDirLocked
from halfmq.broker.store.message_store import MessageStore, PutItem, StoreConfig
from halfmq.broker.store.verify import verify_store

ENTRIES = 16


def fill(path: Path, count: int = 60, segment_bytes: int = 1 << 20) -> list:
    store = MessageStore(StoreConfig(path, segment_bytes=segment_bytes, consume_queue_entries=ENTRIES))
    store.create_topic("T", 2)
    results = []
    for i in range(count):
        [r], end = store.put([PutItem("T", i % 2, b"payload-%03d" % i)])
        results.append(r)
    store.wait_flushed(end).result(5)
    store.close()
    return results


def flip(path: Path, offset: int, bit: int = 0) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 1 << bit
    path.write_bytes(bytes(data))


def segment(path: Path) -> Path:
    return path / "commitlog" / ("0" * 20)


def test_a_clean_store_has_no_findings_and_every_record_and_entry_is_checked(tmp_path: Path) -> None:
    fill(tmp_path)
    report = verify_store(tmp_path, ENTRIES)
    assert report.findings == [] and not report.damaged
    assert (report.records, report.entries) == (60, 60)


def test_a_damaged_record_is_reported_with_file_offset_and_field_and_the_rest_still_checked(tmp_path: Path) -> None:
    results = fill(tmp_path)
    victim = results[20]
    flip(segment(tmp_path), victim.commit_log_offset + victim.size - 2)
    size_victim = results[40]
    flip(segment(tmp_path), size_victim.commit_log_offset + 1, 3)
    before = segment(tmp_path).read_bytes()
    progress = []
    report = verify_store(tmp_path, ENTRIES, lambda done, total: progress.append((done, total)))
    damaged = [f for f in report.findings if "next valid record" in f.what]
    assert [(f.path, f.offset) for f in damaged] == [(segment(tmp_path), victim.commit_log_offset),
                                                     (segment(tmp_path), size_victim.commit_log_offset)]
    assert damaged[0].what.startswith("body (crc mismatch)") and damaged[1].what.startswith("size (")
    assert report.damaged and report.records == 58
    assert segment(tmp_path).read_bytes() == before  # read-only
    assert progress[-1][0] == progress[-1][1] > 0


def test_a_torn_tail_is_listed_as_repaired_at_start_not_as_damage(tmp_path: Path) -> None:
    fill(tmp_path)
    seg = segment(tmp_path)
    seg.write_bytes(seg.read_bytes()[:-5])
    report = verify_store(tmp_path, ENTRIES)
    assert report.findings and all(f.repaired_at_start for f in report.findings)
    assert not report.damaged


def test_a_missing_consume_queue_file_is_listed_as_repaired_at_start(tmp_path: Path) -> None:
    fill(tmp_path, count=100)  # 50 entries a queue: four files
    (tmp_path / "consumequeue" / "T" / "1" / f"{ENTRIES * 20:020d}").unlink()
    report = verify_store(tmp_path, ENTRIES)
    assert not report.damaged
    assert any("a file is missing" in f.what for f in report.findings)
    assert any("lacks entries 16 to 49" in f.what for f in report.findings)


def test_a_consume_queue_entry_pointing_at_the_wrong_record_is_damage(tmp_path: Path) -> None:
    results = fill(tmp_path)
    cq = tmp_path / "consumequeue" / "T" / "0" / ("0" * 20)
    flip(cq, 3 * 20 + 1)  # entry 3's commit-log offset
    report = verify_store(tmp_path, ENTRIES)
    [finding] = report.findings
    assert (finding.path, finding.offset) == (cq, 60) and report.damaged
    assert f"the log holds it at {results[6].commit_log_offset}" in finding.what


def test_a_missing_segment_is_damage(tmp_path: Path) -> None:
    fill(tmp_path, count=200, segment_bytes=4096)
    segments = sorted((tmp_path / "commitlog").iterdir())
    segments[1].unlink()
    report = verify_store(tmp_path, ENTRIES)
    assert report.damaged
    assert any("segment files missing" in f.what for f in report.findings)


def test_verify_refuses_a_data_dir_in_use(tmp_path: Path) -> None:
    store = MessageStore(StoreConfig(tmp_path))
    try:
        with pytest.raises(DataDirLocked):
            verify_store(tmp_path, ENTRIES)
    finally:
        store.close()
