"""The FIFO order checker finds each anomaly in a hand-made history, and none in a history that keeps order."""

from __future__ import annotations

from tests.support.order_checker import Event, History, Kind, check

D, S, A, N, X = Kind.DELIVERED, Kind.ACK_SENT, Kind.ACKED, Kind.NACKED, Kind.DEAD_LETTERED


def history(*events: tuple[str, int, Kind], sent: dict[str, int] | None = None, cg: str = "c") -> list[Event]:
    """Sends first (``sent``: group -> how many), then ``events`` as (message group, seq, kind) of consumer group ``cg``."""
    sends = [Event("", g, seq, Kind.SENT) for g, n in (sent or {"g": 2}).items() for seq in range(n)]
    return sends + [Event(cg, g, seq, kind) for g, seq, kind in events]


def test_a_history_that_keeps_order_through_a_nack_and_a_dead_letter_has_no_anomaly() -> None:
    verdict = check(history(("g", 0, D), ("g", 0, N), ("g", 0, D), ("g", 0, X), ("g", 1, D), ("g", 1, A),
                            ("h", 0, D), ("h", 0, A), sent={"g": 2, "h": 1}))
    assert verdict.ok, verdict.summary()
    assert (verdict.sent, verdict.deliveries) == (3, 4)


def test_a_message_delivered_while_an_earlier_one_of_its_group_is_unsettled_is_overtaken() -> None:
    verdict = check(history(("g", 0, D), ("g", 1, D), ("g", 0, A), ("g", 1, A)))
    assert verdict.counts()["overtaken"] == 1 and verdict.overtaken == ["c/g#1 while #0 was not settled"]


def test_another_groups_message_does_not_overtake() -> None:
    assert check(history(("g", 0, D), ("h", 0, D), ("g", 0, A), ("h", 0, A), ("g", 1, D), ("g", 1, A),
                         sent={"g": 2, "h": 1})).ok


def test_settles_not_in_send_order_are_out_of_order() -> None:
    verdict = check(history(("g", 0, D), ("g", 1, D), ("g", 1, A), ("g", 0, A)))
    assert verdict.counts()["out_of_order"] == 1 and verdict.out_of_order == ["c/g#0 settled after #1"]


def test_an_acknowledged_send_never_delivered_is_lost() -> None:
    verdict = check(history(("g", 0, D), ("g", 0, A)))
    assert verdict.lost == ["c/g#1"]


def test_a_consumer_group_that_must_have_consumed_and_received_nothing_lost_everything() -> None:
    assert check(history(sent={"g": 1}), consumer_groups=["c"]).lost == ["c/g#0"]


def test_a_delivery_after_the_ack_was_answered_is_a_duplicate_after_ack() -> None:
    verdict = check(history(("g", 0, D), ("g", 0, A), ("g", 0, D), ("g", 1, D), ("g", 1, A)))
    assert verdict.duplicate_after_ack == ["c/g#0"] and not verdict.overtaken


def test_an_ack_counts_from_when_it_is_sent_since_another_consumer_may_hear_first() -> None:
    assert check(history(("g", 0, D), ("g", 0, S), ("g", 1, D), ("g", 0, A), ("g", 1, S), ("g", 1, A))).ok


def test_an_ack_sent_whose_answer_was_lost_counts_as_settled_while_its_message_is_not_delivered_again() -> None:
    assert check(history(("g", 0, D), ("g", 0, S), ("g", 1, D), ("g", 1, S), ("g", 1, A))).ok


def test_an_ack_sent_that_did_not_settle_makes_what_came_meanwhile_overtaken() -> None:
    verdict = check(history(("g", 0, D), ("g", 0, S), ("g", 1, D), ("g", 1, S), ("g", 1, A), ("g", 0, D),
                            ("g", 0, S), ("g", 0, A)))
    assert verdict.overtaken == ["c/g#1 before #0"]
    assert not verdict.duplicate_after_ack
    assert verdict.out_of_order == ["c/g#0 settled after #1"]


def test_a_delivered_message_never_settled_is_unsettled() -> None:
    assert check(history(("g", 0, D), ("g", 0, A), ("g", 1, D))).unsettled == ["c/g#1"]


def test_consumer_groups_are_checked_apart() -> None:
    events = history(("g", 0, D), ("g", 0, A), ("g", 1, D), ("g", 1, A), cg="one")
    events += [Event("two", "g", 0, D), Event("two", "g", 0, A), Event("two", "g", 1, D), Event("two", "g", 1, A)]
    assert check(events).ok


def test_the_history_records_from_several_threads_in_real_time_order() -> None:
    import threading

    recorded = History()
    threads = [threading.Thread(target=lambda n=n: [recorded.sent(f"g{n}", seq) for seq in range(100)]) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert check(recorded).sent == 400
