"""The idempotent send window: the pure decision, exhaustively, and the window state against a model."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from halfmq.broker.idempotence.send_window import SendWindow, Verdict, decide


def expected(high: int, remembered: set[int], size: int, sequence: int) -> Verdict:
    if sequence in remembered:
        return Verdict.REPEAT
    if sequence <= high:
        return Verdict.OLD_REPEAT
    return Verdict.TOO_FAR if sequence - high > size else Verdict.STORE


def test_every_decision_over_a_small_space_matches_the_rule() -> None:
    checked = 0
    for size in (1, 2, 3):
        for high in range(-1, 4):
            for bits in range(1 << 8):
                remembered = {n for n in range(8) if bits >> n & 1}
                for sequence in range(0, 9):
                    assert decide(high, remembered, size, sequence) is expected(high, remembered, size, sequence)
                    checked += 1
    assert checked == 3 * 5 * 256 * 9


def test_a_send_within_the_window_is_stored_and_one_past_it_is_out_of_order() -> None:
    assert decide(-1, set(), 64, 63) is Verdict.STORE
    assert decide(-1, set(), 64, 64) is Verdict.TOO_FAR
    assert decide(9, set(), 4, 13) is Verdict.STORE
    assert decide(9, set(), 4, 14) is Verdict.TOO_FAR


def test_a_repeat_gets_its_answer_while_remembered_and_an_old_one_is_still_known_as_stored() -> None:
    window = SendWindow(size=4)
    for n in range(10):
        window.stored(n, f"answer {n}")
    assert window.high == 9
    assert window.decide(9) is Verdict.REPEAT and window.answers[9] == "answer 9"
    assert window.decide(6) is Verdict.REPEAT
    assert window.decide(5) is Verdict.OLD_REPEAT and 5 not in window.answers
    assert window.decide(10) is Verdict.STORE


def test_out_of_order_arrivals_move_the_high_water_mark_only_over_contiguous_numbers() -> None:
    window = SendWindow(size=8)
    for n in (3, 1, 2):
        window.stored(n, n)
    assert window.high == -1 and window.decide(0) is Verdict.STORE
    window.stored(0, 0)
    assert window.high == 3


@given(st.integers(1, 16), st.permutations(list(range(40))), st.integers(0, 40))
def test_the_window_agrees_with_a_model_for_any_arrival_order(size: int, order: list[int], cut: int) -> None:
    """Store whatever the decision allows, in any order: the window keeps H and every answer above H - size, and each
    store changes how many it remembers by what ``growth`` said beforehand."""
    window = SendWindow(size=size)
    stored: set[int] = set()
    for sequence in itertools.islice(order, cut):
        verdict = window.decide(sequence)
        high = max((h for h in range(-1, 41) if all(n in stored for n in range(h + 1))), default=-1)
        assert verdict is expected(high, {n for n in stored if n > high - size}, size, sequence)
        if verdict is Verdict.STORE:
            growth = window.growth(sequence)
            assert window.stored(sequence, sequence) == growth  # what a principal's cap was checked against
            stored.add(sequence)
        assert len(window.answers) <= 2 * size - 1  # at most size at or below H, the rest out of order above it
    high = max(h for h in range(-1, 41) if all(n in stored for n in range(h + 1)))
    assert window.high == high
    assert set(window.answers) == {n for n in stored if n > high - size}


def test_an_in_order_send_into_a_full_window_remembers_no_more_and_one_that_closes_a_gap_may_remember_less() -> None:
    window = SendWindow(size=4)
    for n in range(4):
        assert window.growth(n) == 1 and window.stored(n, n) == 1
    assert window.growth(4) == 0 and window.stored(4, 4) == 0  # 0 is forgotten as 4 is remembered
    for n in (6, 7, 8):
        assert window.stored(n, n) == 1  # out of order: above H, nothing forgotten yet
    assert window.growth(5) == -3 and window.stored(5, 5) == -3  # H moves from 4 to 8, forgetting 1..4
    assert window.growth(8) == 0 and window.growth(2) == 0  # a repeat, and a number already forgotten
