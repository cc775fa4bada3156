"""The disk watermarks' decision with plain numbers, and the watch over a fake filesystem reading."""

from __future__ import annotations

import pytest

from halfmq.broker.store.disk_watermarks import (
    DiskLevel,
    DiskUsage,
    DiskWatch,
    DiskWatermarks,
    bytes_over_early_mark,
    disk_level,
    filesystem_usage,
)

MARKS = DiskWatermarks(early_delete_ratio=0.75, refuse_sends_ratio=0.90)


def used(ratio: float, size: int = 1000) -> DiskUsage:
    return DiskUsage(used=int(ratio * size), free=size - int(ratio * size))


@pytest.mark.parametrize(("ratio", "level"), [(0.0, DiskLevel.OK), (0.75, DiskLevel.OK), (0.751, DiskLevel.EARLY_DELETE),
                                              (0.90, DiskLevel.EARLY_DELETE), (0.901, DiskLevel.REFUSE_SENDS),
                                              (1.0, DiskLevel.REFUSE_SENDS)])
def test_disk_level_is_past_a_mark_once_the_used_share_is_above_it(ratio: float, level: DiskLevel) -> None:
    assert disk_level(ratio, MARKS) is level


def test_a_mark_of_one_is_never_passed_even_by_a_full_disk() -> None:
    assert disk_level(1.0, DiskWatermarks(1.0, 1.0)) is DiskLevel.OK


def test_the_used_share_counts_what_is_free_to_the_broker_not_blocks_reserved_for_root() -> None:
    assert DiskUsage(used=750, free=250).used_ratio == 0.75
    assert DiskUsage(used=0, free=0).used_ratio == 0.0


def test_bytes_over_early_mark_is_what_brings_the_disk_back_under_it() -> None:
    assert bytes_over_early_mark(used(0.70), MARKS) == 0
    over = bytes_over_early_mark(used(0.80), MARKS)
    assert over == 50
    after = DiskUsage(used=800 - over, free=200 + over)
    assert disk_level(after.used_ratio, MARKS) is DiskLevel.OK


class FakeDisk:
    def __init__(self, ratio: float) -> None:
        self.ratio = ratio

    def __call__(self) -> DiskUsage:
        return used(self.ratio)


def test_the_watch_refuses_sends_past_the_second_mark_and_resumes_once_the_disk_is_under_it_again() -> None:
    disk = FakeDisk(0.5)
    watch = DiskWatch(disk, MARKS)
    assert watch.read() is DiskLevel.OK and not watch.sends_refused and watch.reclaim_bytes == 0
    disk.ratio = 0.95
    assert watch.read() is DiskLevel.REFUSE_SENDS and watch.sends_refused and watch.reclaim_bytes == 200
    disk.ratio = 0.80
    assert watch.read() is DiskLevel.EARLY_DELETE and not watch.sends_refused and watch.reclaim_bytes == 50
    disk.ratio = 0.10
    assert watch.read() is DiskLevel.OK and watch.used_ratio == 0.10 and watch.reclaim_bytes == 0


def test_before_its_first_reading_the_watch_refuses_nothing() -> None:
    watch = DiskWatch(FakeDisk(1.0), MARKS)
    assert watch.level is DiskLevel.OK and watch.reclaim_bytes == 0 and watch.used_ratio == 0.0


def test_filesystem_usage_reads_the_real_filesystem(tmp_path) -> None:
    reading = filesystem_usage(tmp_path)()
    assert reading.used > 0 and 0 < reading.used_ratio <= 1


def test_a_level_is_left_only_a_margin_under_its_mark_so_a_disk_hovering_at_it_does_not_flip() -> None:
    marks = DiskWatermarks(early_delete_ratio=0.75, refuse_sends_ratio=0.90, resume_margin=0.02)
    assert disk_level(0.895, marks, DiskLevel.REFUSE_SENDS) is DiskLevel.REFUSE_SENDS  # just under the mark: still refused
    assert disk_level(0.879, marks, DiskLevel.REFUSE_SENDS) is DiskLevel.EARLY_DELETE
    assert disk_level(0.895, marks, DiskLevel.EARLY_DELETE) is DiskLevel.EARLY_DELETE  # coming from below: the mark itself
    assert disk_level(0.74, marks, DiskLevel.EARLY_DELETE) is DiskLevel.EARLY_DELETE
    assert disk_level(0.729, marks, DiskLevel.REFUSE_SENDS) is DiskLevel.OK
    assert disk_level(0.999, DiskWatermarks(1.0, 1.0, 0.02), DiskLevel.REFUSE_SENDS) is DiskLevel.OK  # a mark of 1 is off


def test_a_refused_sends_retry_after_is_the_next_reading_of_the_disk() -> None:
    assert DiskWatch(FakeDisk(0.5), MARKS, check_interval=2.5).retry_after == 3
    assert DiskWatch(FakeDisk(0.5), MARKS, check_interval=0.2).retry_after == 1
