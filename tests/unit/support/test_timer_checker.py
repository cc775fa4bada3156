"""The timer checker counts each anomaly from a hand-made history, and nothing in a clean one."""

from __future__ import annotations

from tests.support.timer_checker import check

DUE = {"a": 1_000, "b": 2_000, "r": 3_000}  # r: a rolled-back half's timer, never to be delivered


def test_a_clean_history_has_no_anomaly() -> None:
    report = check(DUE, ["a", "b"], released=[("a", 1_000), ("b", 2_150)], received=[("a", 1_020), ("b", 2_200), ("b", 9_000)])
    assert report.ok, report
    assert report.expected == 2


def test_a_release_one_millisecond_before_its_due_time_is_early() -> None:
    report = check(DUE, ["a", "b"], released=[("a", 999), ("b", 2_000)], received=[("a", 1_001), ("b", 2_001)])
    assert (report.early, report.lost, report.released_twice) == (1, 0, 0)
    assert "a released at 999" in report.examples["early"][0]


def test_a_receive_before_its_due_time_is_early() -> None:
    report = check(DUE, ["a"], released=[("a", 1_000)], received=[("a", 900)])
    assert report.early == 1


def test_a_timer_never_received_is_lost() -> None:
    report = check(DUE, ["a", "b"], released=[("a", 1_000)], received=[("a", 1_010)])
    assert (report.early, report.lost, report.released_twice) == (0, 1, 0)
    assert report.examples["lost"] == ["b due 2000"]


def test_a_timer_released_by_two_copies_in_the_log_is_released_twice() -> None:
    report = check(DUE, ["a"], released=[("a", 1_000), ("a", 1_500)], received=[("a", 1_010)])
    assert (report.early, report.lost, report.released_twice) == (0, 0, 1)


def test_a_rolled_back_timer_that_arrives_is_unexpected() -> None:
    report = check(DUE, ["a"], released=[("a", 1_000), ("r", 3_000)], received=[("a", 1_010), ("r", 3_010)])
    assert report.unexpected == 1
    assert not report.ok


def test_a_send_without_an_answer_may_arrive_or_not_but_never_early() -> None:
    report = check(DUE, ["a"], released=[("a", 1_000), ("b", 1_900)], received=[("a", 1_010), ("b", 1_950)], maybe=["b", "r"])
    assert (report.lost, report.unexpected, report.early) == (0, 0, 1)
