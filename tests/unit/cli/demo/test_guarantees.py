"""The payment rows of the demo's guarantees, on hand-made observations: each anomaly fails its row."""

from __future__ import annotations

from halfmq.cli.demo.guarantees import PaymentsObserved, check_payments

EARLY, ON_STATUS = "no delayed message delivered early", "every unpaid order is cancelled, no paid one is"


def verdict(rows: dict[str, tuple[str, int | None, int | None]], paid: set[str], refused: set[str] = frozenset(),
            unknown: set[str] = frozenset()) -> dict[str, bool]:
    return {c.name: c.ok for c in check_payments(PaymentsObserved(rows, set(paid), set(refused), set(unknown)))}


def test_payments_that_fell_due_on_time_and_statuses_that_match_pass_both_rows() -> None:
    rows = {"o1": ("paid", 1_000, 1_050), "o2": ("cancelled", 2_000, 2_000), "o3": ("cancelled", 3_000, 3_400)}
    assert verdict(rows, paid={"o1"}, refused={"o3"}) == {EARLY: True, ON_STATUS: True}


def test_a_message_seen_before_its_due_time_or_never_fails_the_early_row() -> None:
    assert verdict({"o1": ("paid", 1_000, 999)}, paid={"o1"})[EARLY] is False
    assert verdict({"o1": ("created", None, None)}, paid=set())[EARLY] is False


def test_a_paid_order_cancelled_or_an_unpaid_one_left_open_fails_the_status_row() -> None:
    assert verdict({"o1": ("cancelled", 1_000, 1_001)}, paid={"o1"})[ON_STATUS] is False
    assert verdict({"o1": ("created", 1_000, 1_001)}, paid=set())[ON_STATUS] is False
    assert verdict({"o1": ("cancelled", 1_000, 1_001)}, paid=set(), unknown={"o1"})[ON_STATUS] is True  # no answer: either is right
