"""The plan of an offset reset: where each queue goes, clamped to what it holds; refused while deliveries are held."""

from __future__ import annotations

import pytest

from halfmq.broker.delivery.offset_reset import QueueMove, QueuePosition, ResetTarget, ResetTo, plan_reset
from halfmq.errors import GroupHasInFlight, InvalidOffsetReset

QUEUES = [QueuePosition(0, committed=50, first=10, end=100, in_flight=0, at_time=40),
          QueuePosition(1, committed=7, first=0, end=20, in_flight=0, at_time=20)]


def targets(moves: list[QueueMove]) -> list[tuple[int, int, int]]:
    return [(m.queue_id, m.from_offset, m.to_offset) for m in moves]


def test_earliest_goes_to_each_queues_first_retained_offset() -> None:
    assert targets(plan_reset(QUEUES, ResetTo(ResetTarget.EARLIEST), force=False)) == [(0, 50, 10), (1, 7, 0)]


def test_latest_goes_to_each_queues_end() -> None:
    assert targets(plan_reset(QUEUES, ResetTo(ResetTarget.LATEST), force=False)) == [(0, 50, 100), (1, 7, 20)]


def test_an_offset_is_clamped_to_each_queues_range() -> None:
    assert targets(plan_reset(QUEUES, ResetTo(ResetTarget.OFFSET, offset=5), force=False)) == [(0, 50, 10), (1, 7, 5)]
    assert targets(plan_reset(QUEUES, ResetTo(ResetTarget.OFFSET, offset=500), force=False)) == [(0, 50, 100), (1, 7, 20)]


def test_a_time_target_goes_to_the_offset_found_at_that_time() -> None:
    assert targets(plan_reset(QUEUES, ResetTo(ResetTarget.TIMESTAMP, timestamp_ms=1), force=False)) == [(0, 50, 40), (1, 7, 20)]


def test_a_duration_ago_counts_back_from_now() -> None:
    assert ResetTo(ResetTarget.DURATION, ago_ms=60_000).at_ms(1_000_000) == 940_000
    assert ResetTo(ResetTarget.TIMESTAMP, timestamp_ms=5).at_ms(1_000_000) == 5
    assert ResetTo(ResetTarget.EARLIEST).at_ms(1_000_000) is None


@pytest.mark.parametrize("to", [ResetTo(ResetTarget.TIMESTAMP), ResetTo(ResetTarget.DURATION), ResetTo(ResetTarget.OFFSET),
                                ResetTo(ResetTarget.DURATION, ago_ms=-1)])
def test_a_target_without_its_value_is_invalid(to: ResetTo) -> None:
    with pytest.raises(InvalidOffsetReset):
        to.at_ms(0)
        plan_reset([QueuePosition(0, 0, 0, 1, 0)], to, force=False)


def test_deliveries_in_flight_refuse_the_plan_unless_forced() -> None:
    held = [QueuePosition(0, committed=5, first=0, end=9, in_flight=2), QueuePosition(1, 0, 0, 0, 0)]
    with pytest.raises(GroupHasInFlight):
        plan_reset(held, ResetTo(ResetTarget.EARLIEST), force=False)
    assert plan_reset(held, ResetTo(ResetTarget.EARLIEST), force=True)[0] == QueueMove(0, 5, 0, 2)


def test_a_dry_run_and_a_reset_are_the_same_plan() -> None:
    to = ResetTo(ResetTarget.OFFSET, offset=15)
    assert plan_reset(QUEUES, to, force=False) == plan_reset(QUEUES, to, force=False)
