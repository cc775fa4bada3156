"""Retention's decision: which whole segments go, under a fake clock (now is a plain number of ms)."""

from __future__ import annotations

from halfmq.broker.store.retention import (
    ByteWindow,
    RetentionLimits,
    SegmentFacts,
    first_at_or_after,
    grown,
    lowest_pin,
    new_log_start,
    retained_start,
    trimmed,
)

HOUR = 3_600_000
NOW = 100 * HOUR


def segments(*written_hours_ago: float, size: int = 1000) -> list[SegmentFacts]:
    """Segments of ``size`` bytes each, last written that many hours before NOW, in log order."""
    return [SegmentFacts(i * size, (i + 1) * size, int(NOW - hours * HOUR)) for i, hours in enumerate(written_hours_ago)]


def by_age(hours: float) -> RetentionLimits:
    return RetentionLimits(int(hours * HOUR), None)


def test_segments_last_written_before_the_age_limit_go_and_the_log_starts_at_the_first_kept() -> None:
    assert new_log_start(segments(50, 40, 30, 1), by_age(35), [], NOW) == 2000


def test_a_segment_written_exactly_at_the_limit_stays() -> None:
    assert new_log_start(segments(35, 1), by_age(35), [], NOW) == 0


def test_the_segment_being_written_never_goes_however_old() -> None:
    assert new_log_start(segments(50, 40), by_age(1), [], NOW) == 1000


def test_only_a_run_from_the_start_goes_a_younger_segment_stops_it() -> None:
    """Mtimes out of order (a segment touched again): nothing past the first young segment goes, so the log stays whole."""
    assert new_log_start(segments(50, 2, 40, 1), by_age(10), [], NOW) == 1000


def test_a_pin_keeps_the_segment_holding_it_and_every_one_after() -> None:
    assert new_log_start(segments(50, 40, 30, 1), by_age(10), [1500], NOW) == 1000


def test_a_pin_at_a_segments_base_lets_the_ones_before_it_go() -> None:
    assert new_log_start(segments(50, 40, 30, 1), by_age(10), [2000], NOW) == 2000


def test_the_lowest_of_several_pins_holds_and_pins_holding_nothing_are_ignored() -> None:
    assert new_log_start(segments(50, 40, 30, 1), by_age(10), [None, 2500, 1200, None], NOW) == 1000
    assert lowest_pin([None, None]) is None


def test_by_size_the_oldest_segments_go_until_the_rest_holds_less_than_the_limit() -> None:
    """Kafka's retention.bytes: a segment goes while the segments after it alone hold the limit or more."""
    assert new_log_start(segments(3, 2, 1, 0), RetentionLimits(None, 2000), [], NOW) == 2000
    assert new_log_start(segments(3, 2, 1, 0), RetentionLimits(None, 2001), [], NOW) == 1000


def test_without_limits_nothing_goes() -> None:
    assert new_log_start(segments(500, 400, 1), RetentionLimits(None, None), [], NOW) == 0


def test_either_limit_lets_a_segment_go() -> None:
    limits = RetentionLimits(int(45 * HOUR), 2000)
    assert new_log_start(segments(50, 2, 1, 0), limits, [], NOW) == 2000  # the first by age, the second by size


def test_time_moving_on_lets_more_go_never_less() -> None:
    logs = segments(5, 4, 3, 0)
    starts = [new_log_start(logs, by_age(2), [], NOW + hours * HOUR) for hours in (-3, -2, 0, 1, 2)]
    assert starts == sorted(starts) == [0, 1000, 3000, 3000, 3000]


def test_a_log_that_starts_past_zero_keeps_its_start_when_nothing_goes() -> None:
    logs = [SegmentFacts(7000, 8000, NOW), SegmentFacts(8000, 8500, NOW)]
    assert new_log_start(logs, by_age(1), [], NOW) == 7000
    assert new_log_start([], by_age(1), [], NOW) == 0


def test_a_disk_past_its_early_mark_takes_the_oldest_segments_before_their_time_until_enough_is_freed() -> None:
    """None is past the age limit; the disk wants 1,500 bytes back: the two oldest go (1,000 would not be enough)."""
    assert new_log_start(segments(3, 2, 1, 0), by_age(100), [], NOW, reclaim_bytes=1500) == 2000
    assert new_log_start(segments(3, 2, 1, 0), by_age(100), [], NOW, reclaim_bytes=1000) == 1000
    assert new_log_start(segments(3, 2, 1, 0), by_age(100), [], NOW, reclaim_bytes=0) == 0


def test_a_full_disk_never_takes_a_pinned_segment_nor_the_one_being_written() -> None:
    """An open half, an open producer transaction, a pending timer or the state records hold whatever the disk wants."""
    assert new_log_start(segments(3, 2, 1, 0), by_age(100), [1500], NOW, reclaim_bytes=10**9) == 1000
    assert new_log_start(segments(3, 2, 1, 0), by_age(100), [], NOW, reclaim_bytes=10**9) == 3000


# --- a topic's own limits ------------------------------------------------------------------------------------------------
def test_a_topics_keep_holds_the_segments_from_it_on_like_a_pin() -> None:
    """A topic whose own retention is longer than the broker's keeps the segments holding its messages."""
    assert new_log_start(segments(50, 40, 30, 1), by_age(10), [], NOW, kept=[1500]) == 1000
    assert new_log_start(segments(50, 40, 30, 1), by_age(10), [], NOW, kept=[]) == 3000


def test_a_disk_past_its_watermark_takes_a_segment_a_topic_keeps_but_never_a_pinned_one() -> None:
    """The disk watermarks still delete early past a topic's own (longer) retention; the protections hold."""
    assert new_log_start(segments(3, 2, 1, 0), by_age(100), [], NOW, reclaim_bytes=2500, kept=[500]) == 3000
    assert new_log_start(segments(3, 2, 1, 0), by_age(100), [1500], NOW, reclaim_bytes=2500, kept=[500]) == 1000


def test_the_first_offset_stored_at_or_after_a_cutoff_is_found_by_bisection() -> None:
    stored = [10, 20, 20, 30, 40]
    assert first_at_or_after(0, 5, stored.__getitem__, 20) == 1
    assert first_at_or_after(0, 5, stored.__getitem__, 41) == 5
    assert first_at_or_after(0, 5, stored.__getitem__, 0) == 0
    assert first_at_or_after(2, 5, stored.__getitem__, 0) == 2


def test_an_offset_whose_time_cannot_be_read_counts_as_older() -> None:
    stored: list[int | None] = [10, None, 30, 40]
    assert first_at_or_after(0, 4, stored.__getitem__, 20) == 2


def test_a_bytes_window_counts_what_was_written_since_and_lets_the_oldest_go_while_over_the_limit() -> None:
    window = grown(ByteWindow(0, 0, 0), 0, [100, 100, 100])
    assert window == ByteWindow(0, 3, 300)
    assert trimmed(window, [100, 100, 100], 250) == ByteWindow(1, 3, 200)
    assert trimmed(window, [100, 100, 100], 300) == window


def test_a_bytes_window_always_keeps_the_newest_entry() -> None:
    assert trimmed(ByteWindow(0, 2, 1000), [500, 500], 10) == ByteWindow(1, 2, 500)


def test_a_bytes_window_the_log_start_passed_starts_again_at_the_queues_first_offset() -> None:
    assert grown(ByteWindow(2, 9, 700), 5, []) == ByteWindow(5, 5, 0)


def test_a_queues_earliest_retained_offset_is_past_both_limits_within_the_queue() -> None:
    assert retained_start(3, 20, 7, ByteWindow(9, 20, 0)) == 9
    assert retained_start(3, 20, 12, ByteWindow(9, 20, 0)) == 12
    assert retained_start(3, 20, None, None) == 3
    assert retained_start(3, 20, 25, None) == 20
    assert retained_start(10, 20, 4, None) == 10
