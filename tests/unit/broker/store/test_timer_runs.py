"""Sorted runs of (due, offset) pairs: merged in order, read in chunks, whole or absent after a crash."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from halfmq.broker.store.timer_runs import CHUNK, RunCursor, compaction, merge, tier, write_run


def test_runs_merge_by_due_time_then_by_offset(tmp_path: Path) -> None:
    write_run(tmp_path / "a", [(10, 5), (20, 1), (20, 7)])
    write_run(tmp_path / "b", [(5, 9), (20, 3), (30, 0)])
    assert list(merge([RunCursor(tmp_path / "a"), RunCursor(tmp_path / "b", position=1)])) == [
        (10, 5), (20, 1), (20, 3), (20, 7), (30, 0)]


def test_a_cursor_reads_a_long_run_in_chunks_from_its_position(tmp_path: Path) -> None:
    pairs = [(i * 2, i) for i in range(CHUNK * 2 + 10)]
    write_run(tmp_path / "long", iter(pairs))
    cursor = RunCursor(tmp_path / "long", position=CHUNK - 1)
    assert (cursor.count, cursor.remaining, cursor.head()) == (len(pairs), len(pairs) - CHUNK + 1, pairs[CHUNK - 1])
    assert list(cursor.pairs()) == pairs[CHUNK - 1:]


def test_a_run_is_whole_or_absent_after_a_crash_between_write_and_rename(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def crash(src: object, dst: object) -> None:
        raise OSError("killed before the rename")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError):
        write_run(tmp_path / "run-1", [(1, 1), (2, 2)])
    assert list(tmp_path.iterdir()) == []  # no run, and no temp file holding space


def test_compaction_picks_fan_in_runs_of_the_lowest_full_tier_and_leaves_other_sizes_alone() -> None:
    run, big = 65_536, 600_000  # a run of 600,000 pairs is a tier above eight runs of 65,536
    assert compaction([run] * 7 + [big], run, 8) == []
    assert compaction([big] + [run] * 9, run, 8) == [1, 2, 3, 4, 5, 6, 7, 8]
    assert compaction([run, 10, run, 20] + [run] * 5 + [big] * 8, run, 8) == [0, 1, 2, 3, 4, 5, 6, 7]  # smallest first
    assert compaction([big] * 8 + [run], run, 8) == list(range(8))
    assert (tier(run * 8 - 1, run, 8), tier(run * 8, run, 8), tier(run * 64, run, 8)) == (0, 1, 2)
