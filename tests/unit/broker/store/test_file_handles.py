"""The store's descriptors: a bounded table for reads (least recently used closed first), and a store whose open files
stay under that bound however many files its history made."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from halfmq.broker.store.file_handles import FileHandles
from halfmq.broker.store.message_store import MessageStore, PutItem, StoreConfig


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.fixture
def files(tmp_path: Path) -> list[Path]:
    paths = [tmp_path / f"f{i}" for i in range(6)]
    for i, path in enumerate(paths):
        path.write_bytes(b"%d" % i)
    return paths


def test_reads_open_at_most_the_bound_closing_the_least_recently_used(files: list[Path]) -> None:
    handles = FileHandles(limit=2)
    for path in files:
        with handles.use(path) as fd:
            assert os.pread(fd, 1, 0) == path.read_bytes()
    assert handles.open_count == 2
    handles.close()
    assert handles.open_count == 0


def test_a_descriptor_in_use_is_never_closed_under_its_reader(files: list[Path]) -> None:
    handles = FileHandles(limit=1)
    with handles.use(files[0]) as held:
        for path in files[1:]:
            with handles.use(path):
                pass
        assert os.pread(held, 1, 0) == b"0"  # still this file's
    assert handles.open_count == 1


def test_a_forgotten_file_is_closed_when_its_last_reader_lets_go(files: list[Path]) -> None:
    handles = FileHandles(limit=4)
    before = open_fds()
    with handles.use(files[0]) as fd:
        handles.forget(files[0])
        assert os.pread(fd, 1, 0) == b"0"
        assert handles.open_count == 0
    assert open_fds() == before


def test_a_single_read_holds_the_table_as_a_use_block_does(files: list[Path]) -> None:
    """``pread`` (every record a consumer receives) opens, keeps the bound and lets go as ``use`` does: no descriptor
    is left in use, and one of a file deleted before it is opened is FileNotFoundError (the store's "below the start")."""
    handles = FileHandles(limit=2)
    before = open_fds()
    assert [handles.pread(path, 1, 0) for path in files] == [path.read_bytes() for path in files]
    assert handles.open_count == 2
    gone = files[0]
    gone.unlink()
    handles.forget(gone)
    with pytest.raises(FileNotFoundError):
        handles.pread(gone, 1, 0)
    handles.close()
    assert handles.open_count == 0 and open_fds() == before


def test_a_store_with_many_files_keeps_its_descriptors_under_the_bound_reading_old_and_new(tmp_path: Path) -> None:
    """Small segments, queue files and index files make hundreds of files; reading every message from the first to the
    last, and finding old and new ones by key, opens at most ``open_files`` of them at once, plus the files being
    written (the last segment, each queue's last file, the index file being filled, a rolled one until its fsync)."""
    bound = 8
    before = open_fds()
    store = MessageStore(StoreConfig(tmp_path, segment_bytes=4096, consume_queue_entries=16, index_slots=16,
                                     index_entries=16, open_files=bound, checkpoint_interval=3600))
    store.create_topic("T", 2)
    for i in range(100):
        _, end = store.put([PutItem("T", i % 2, b"x" * 300 + b"%d" % j, {"KEYS": f"k{i}-{j}"}) for j in range(5)])
        store.wait_flushed(end).result(5)
        if i % 10 == 9:
            store.checkpoint()  # fsyncs: rolled files give their writers' descriptors back
    made = sum(len(files) for _, _, files in os.walk(tmp_path))
    assert made > 100  # history: far more files than the bound
    for qid in (0, 1):
        first, last = store.reads.queue_range("T", qid)
        assert [m.body[-1:] for m in store.reads.read_queue("T", qid, first, last - first)][:1] == [b"0"]
        for offset in range(first, last):
            assert store.reads.get("T", qid, offset) is not None
    assert [m.body for m in store.keys.query("T", "k0-0")] == [b"x" * 300 + b"0"]
    assert [m.body for m in store.keys.query("T", "k99-4")] == [b"x" * 300 + b"4"]
    writers = 1 + 2 + 1 + 4  # the last segment, each queue's last file, the index file, rolled ones not yet fsynced
    held = open_fds() - before
    assert held <= bound + writers + 2, f"{held} descriptors open for {made} files"  # + the data dir's lock files
    store.close()
    assert open_fds() == before
