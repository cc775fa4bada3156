"""A state snapshot file sent to another node: read part by part, checked whole, installed (store.state_snapshot)."""

from __future__ import annotations

from pathlib import Path

import pytest

from halfmq.broker.store import state_snapshot
from halfmq.broker.store.state_snapshot import FILE, PREVIOUS, QueueSettled, StateSnapshot, Unusable


def _saved(root: Path, entries: int, filler: int = 10) -> bytes:
    state_snapshot.save(root / FILE, StateSnapshot(entries, 0, 0, 0, (QueueSettled("g", "T", 0, entries, ()),), {"pad": "x" * filler}))
    return (root / FILE).read_bytes()


def test_a_snapshot_read_in_parts_is_the_file_and_a_part_of_a_replaced_one_is_the_previous_file(tmp_path: Path) -> None:
    first = _saved(tmp_path, 3, filler=300)
    parts, offset = [], 0
    while offset < len(first):
        data, size, entries = state_snapshot.read_part(tmp_path, None if not parts else 3, offset, 100)
        assert (size, entries) == (len(first), 3)
        parts.append(data)
        offset += len(data)
        if len(parts) == 2:
            _saved(tmp_path, 7)  # a new one meanwhile: the one the earlier parts were of is the previous file now
    assert b"".join(parts) == first
    _saved(tmp_path, 9)  # and now neither file is it
    with pytest.raises(FileNotFoundError):
        state_snapshot.read_part(tmp_path, 3, 0, 100)
    assert state_snapshot.read_part(tmp_path, None, 0, 10**6)[2] == 9


def test_a_received_snapshot_is_used_only_whole(tmp_path: Path) -> None:
    whole = _saved(tmp_path, 3, filler=5000)
    received = tmp_path / "received"
    received.write_bytes(whole)
    assert state_snapshot.check_whole(received, chunk=1000).entries == 3
    for damaged in (whole[:-1], whole[:-10] + b"y" * 10, b"not a snapshot\n{}"):
        received.write_bytes(damaged)
        with pytest.raises(Unusable):
            state_snapshot.check_whole(received, chunk=1000)


def test_installing_a_leaders_snapshot_replaces_both_of_this_nodes_files(tmp_path: Path) -> None:
    _saved(tmp_path, 3)
    _saved(tmp_path, 4)
    assert (tmp_path / PREVIOUS).exists()
    leader = tmp_path / "leader"
    leader.mkdir()
    received = tmp_path / "received"
    received.write_bytes(_saved(leader, 11))
    state_snapshot.install(tmp_path, received)
    assert state_snapshot.header_of(tmp_path / FILE).entries == 11
    assert not (tmp_path / PREVIOUS).exists() and not received.exists()


def test_a_part_asked_past_the_end_is_empty_and_names_the_newest_snapshot(tmp_path: Path) -> None:
    whole = _saved(tmp_path, 5)
    for offset in (len(whole), len(whole) + 1, 1 << 62):
        assert state_snapshot.read_part(tmp_path, None, offset, 100) == (b"", len(whole), 5)
