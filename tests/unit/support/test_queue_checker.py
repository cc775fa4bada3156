"""The queue checker (tests/support/queue_checker.py) on hand-made histories: one per anomaly, and a clean one."""

from __future__ import annotations

from tests.support.queue_checker import History, check


def a_history(sent: list[str], acknowledged: list[str], stored: list[str]) -> History:
    history = History()
    for value in sent:
        history.attempted("w1", value)
    for i, value in enumerate(acknowledged):
        history.acknowledged(value, f"0:{i}")
    history.read_back(stored)
    return history


def test_a_clean_history_shows_no_anomaly() -> None:
    history = a_history(["a", "b", "c"], ["a", "b", "c"], ["a", "b", "c"])
    history.received("a", "c1")
    verdict = check(history, {"n1": ["a", "b", "c"], "n2": ["a", "b", "c"], "n3": ["a", "b", "c"]})
    assert verdict.ok
    assert verdict.counts() == "lost 0, unexpected 0, duplicated 0, divergent 0"
    assert (verdict.attempted, verdict.acknowledged, verdict.stored) == (3, 3, 3)


def test_an_acknowledged_value_missing_from_the_final_read_is_lost() -> None:
    verdict = check(a_history(["a", "b"], ["a", "b"], ["a"]))
    assert not verdict.ok and verdict.lost == ["b"]


def test_a_failed_send_that_was_not_stored_is_not_lost() -> None:
    history = a_history(["a", "b"], ["a"], ["a"])
    history.failed("b", "timeout")
    verdict = check(history)
    assert verdict.ok and verdict.failed == 1


def test_a_send_of_unknown_outcome_that_was_stored_is_no_anomaly() -> None:
    history = a_history(["a", "b"], ["a"], ["a", "b"])
    history.failed("b", "timeout")
    assert check(history).ok


def test_a_stored_value_never_attempted_is_unexpected() -> None:
    verdict = check(a_history(["a"], ["a"], ["a", "ghost"]))
    assert not verdict.ok and verdict.unexpected == ["ghost"]


def test_a_received_value_never_attempted_is_unexpected() -> None:
    history = a_history(["a"], ["a"], ["a"])
    history.received("ghost", "c1")
    assert check(history).unexpected == ["ghost"]


def test_a_value_stored_twice_is_duplicated() -> None:
    verdict = check(a_history(["a", "b"], ["a", "b"], ["a", "b", "b"]))
    assert not verdict.ok and verdict.duplicated == {"b": 2}


def test_a_value_delivered_twice_but_stored_once_is_not_duplicated() -> None:
    history = a_history(["a"], ["a"], ["a"])
    history.received("a", "c1")
    history.received("a", "c2")
    assert check(history).ok


def test_nodes_whose_logs_differ_after_the_heal_are_divergent() -> None:
    verdict = check(a_history(["a"], ["a"], ["a"]), {"n1": b"abcd", "n2": b"abcd", "n3": b"abXd"})
    assert not verdict.ok and verdict.divergent == ["n3 differs from n1 at 2 (lengths 4, 4)"]


def test_a_node_whose_log_is_shorter_after_the_heal_is_divergent() -> None:
    verdict = check(a_history(["a"], ["a"], ["a"]), {"n1": ["a", "b"], "n2": ["a"]})
    assert verdict.divergent == ["n2 differs from n1 at 1 (lengths 2, 1)"]


def test_divergence_is_not_measured_without_the_nodes_logs() -> None:
    assert check(a_history(["a"], ["a"], ["a"])).counts() == "lost 0, unexpected 0, duplicated 0, divergent not measured"


def test_the_summary_names_examples_of_each_anomaly() -> None:
    summary = check(a_history(["a", "b"], ["a", "b"], ["a", "a", "x"])).summary()
    assert summary.startswith("lost 1, unexpected 1, duplicated 1, divergent not measured")
    assert "'lost': ['b']" in summary and "'unexpected': ['x']" in summary and "('a', 2)" in summary


def test_a_value_received_again_after_its_consumer_ack_was_answered_is_duplicated() -> None:
    history = a_history(["a"], ["a"], ["a"])
    history.received("a", "c1", asked_at=history.now())
    history.consumer_acked("a", "c1")
    history.received("a", "c2", asked_at=history.now())
    verdict = check(history)
    assert not verdict.ok and verdict.redelivered == ["a"]
    assert verdict.counts() == "lost 0, unexpected 0, duplicated 1, divergent not measured"


def test_a_receive_asked_for_before_the_ack_was_answered_may_still_deliver_the_value() -> None:
    history = a_history(["a"], ["a"], ["a"])
    history.received("a", "c1")
    asked = history.now()
    history.consumer_acked("a", "c1")
    history.received("a", "c2", asked_at=asked)
    assert check(history).ok


def test_a_value_received_again_after_an_ack_that_was_not_answered_ok_is_no_anomaly() -> None:
    history = a_history(["a"], ["a"], ["a"])
    history.received("a", "c1")
    history.received("a", "c2")
    verdict = check(history)
    assert verdict.ok and (verdict.received, verdict.consumer_acked) == (1, 0)


def test_a_history_survives_its_json_round_trip() -> None:
    history = a_history(["a", "b"], ["a"], ["a"])
    history.failed("b", "timeout")
    history.received("a", "c1", asked_at=3)
    history.consumer_acked("a", "c1")
    assert History.from_json(history.to_json()).operations == history.operations
