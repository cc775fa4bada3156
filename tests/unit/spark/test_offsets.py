"""Planning a read of halfmq queues for Spark: starts, ends, micro-batch limits, partitions, a start found by time."""

from __future__ import annotations

import pytest

from halfmq.spark.offsets import QueueSlice, admit, end_offsets, first_offset_at, plan, start_offsets, visible_ends
from halfmq.spark.options import Position, Start

RANGES = {("T", 0): (5, 20), ("T", 1): (0, 3), ("U", 0): (0, 0)}


def test_earliest_starts_each_queue_at_its_first_retained_message() -> None:
    assert start_offsets(Position(Start.EARLIEST), RANGES) == {"T": {"0": 5, "1": 0}, "U": {"0": 0}}


def test_latest_starts_each_queue_at_its_end() -> None:
    assert start_offsets(Position(Start.LATEST), RANGES) == {"T": {"0": 20, "1": 3}, "U": {"0": 0}}


def test_given_offsets_are_kept_within_the_queue_and_an_unnamed_queue_starts_at_its_first_message() -> None:
    given = Position(Start.OFFSETS, offsets={"T": {"0": 2, "1": 99}})
    assert start_offsets(given, RANGES) == {"T": {"0": 5, "1": 3}, "U": {"0": 0}}


def test_a_timestamp_start_takes_each_queue_s_offset_found_by_time() -> None:
    found = {("T", 0): 7, ("T", 1): 3, ("U", 0): 0}
    assert start_offsets(Position(Start.TIMESTAMP, timestamp_ms=1), RANGES, found) == {"T": {"0": 7, "1": 3}, "U": {"0": 0}}


def test_a_batch_ends_at_the_visible_end_or_a_given_offset_before_it() -> None:
    assert end_offsets(Position(Start.LATEST), RANGES) == visible_ends(RANGES)
    assert end_offsets(Position(Start.OFFSETS, offsets={"T": {"0": 10, "1": 50}}), RANGES) == {"T": {"0": 10, "1": 3}, "U": {"0": 0}}


def test_a_micro_batch_without_a_limit_reads_up_to_the_latest_and_never_moves_back() -> None:
    assert admit({"T": {"0": 8, "1": 4}}, {"T": {"0": 10, "1": 3}}, None) == {"T": {"0": 10, "1": 4}}


def test_a_queue_new_since_the_start_is_read_from_offset_zero() -> None:
    assert admit({"T": {"0": 8}}, {"T": {"0": 8, "1": 6}}, 4) == {"T": {"0": 8, "1": 4}}


def test_a_limit_is_shared_evenly_so_a_busy_queue_does_not_starve_a_quiet_one() -> None:
    end = admit({"T": {"0": 0, "1": 0, "2": 0}}, {"T": {"0": 1000, "1": 2, "2": 1000}}, 10)
    assert end == {"T": {"0": 4, "1": 2, "2": 4}}
    assert sum(end["T"].values()) == 10


def test_a_limit_of_one_still_makes_progress() -> None:
    assert sum(admit({"T": {"0": 0, "1": 0}}, {"T": {"0": 5, "1": 5}}, 1)["T"].values()) == 1


def test_plan_splits_each_queue_into_partitions_of_at_most_the_maximum() -> None:
    slices = plan({"T": {"0": 5, "1": 0}}, {"T": {"0": 12, "1": 3}, "U": {"0": 0}}, 3)
    assert slices == [QueueSlice("T", 0, 5, 8), QueueSlice("T", 0, 8, 11), QueueSlice("T", 0, 11, 12), QueueSlice("T", 1, 0, 3)]


def test_plan_of_an_empty_range_has_no_partitions() -> None:
    assert plan({"T": {"0": 4}}, {"T": {"0": 4}}, 10) == []


STORED = {offset: 1000 + 10 * offset for offset in range(3, 40) if offset not in (17, 18)}  # 17, 18: damaged records


def probe_of(stored: dict[int, int]):
    calls: list[int] = []

    def probe(offset: int) -> tuple[int, int] | None:
        calls.append(offset)
        later = [o for o in sorted(stored) if o >= offset]
        return (later[0], stored[later[0]]) if later else None

    return probe, calls


@pytest.mark.parametrize(("timestamp_ms", "expected"), [(0, 3), (1000 + 10 * 3, 3), (1000 + 10 * 20 - 5, 20), (1000 + 10 * 39, 39),
                                                        (10**9, 40), (1000 + 10 * 17, 19)])
def test_a_read_from_the_offset_found_by_time_starts_at_the_first_message_stored_at_or_after_it(timestamp_ms: int, expected: int) -> None:
    probe, calls = probe_of(STORED)
    found = first_offset_at(3, 40, timestamp_ms, probe)
    # 17 and 18 have no message of their own: from either, a read starts at 19
    assert min([o for o in STORED if o >= found], default=40) == expected
    assert all(STORED[o] < timestamp_ms for o in STORED if o < found)
    assert len(calls) <= 7  # a bisection of 37 offsets, not a scan


def test_the_first_offset_at_a_time_in_an_empty_queue_is_its_end() -> None:
    probe, _ = probe_of({})
    assert first_offset_at(4, 4, 5, probe) == 4
