"""The demo's guarantee checks on hand-made histories: each violation reported FAIL, a kept history PASS (the
apply order per user, the payment rows)."""

from __future__ import annotations

from decimal import Decimal

from halfmq.cli.demo.guarantees import TITLE, Observed, PaymentsObserved, check_all, check_payments, committed_sum, credits_in_order
from tests.support.package_layout import ROOT

SENT = {
    "u1": [("o1", "order"), ("o2", "order"), ("o1", "refund"), ("o3", "order")],
    "u2": [("o4", "order"), ("o4", "refund")],
}


def test_credits_applied_in_send_order_with_each_refund_after_its_order_pass() -> None:
    check = credits_in_order(SENT, {user: list(entries) for user, entries in SENT.items()})
    assert check.ok, check.detail
    assert check.name == "credits applied in order per user"
    assert check.detail == "6 credits of 2 users in send order; 2 refunds after their orders"


def test_a_refund_applied_before_its_order_fails() -> None:
    applied = {**SENT, "u2": [("o4", "refund"), ("o4", "order")]}
    check = credits_in_order(SENT, applied)
    assert not check.ok
    assert "1 refunds before their order, e.g. ['o4']" in check.detail


def test_a_refund_applied_without_its_order_fails() -> None:
    check = credits_in_order(SENT, {"u2": [("o4", "refund")]})
    assert not check.ok and "1 refunds before their order" in check.detail


def test_orders_of_one_user_applied_out_of_send_order_fail() -> None:
    applied = {**SENT, "u1": [("o2", "order"), ("o1", "order"), ("o1", "refund"), ("o3", "order")]}
    check = credits_in_order(SENT, applied)
    assert not check.ok
    assert check.detail.startswith("1 applied before a message sent ahead of them, e.g. ['order o1']")


def test_a_credit_that_was_never_sent_fails() -> None:
    check = credits_in_order(SENT, {"u2": [("o4", "order"), ("o9", "order")]})
    assert not check.ok and "1 applied but never sent, e.g. ['order o9']" in check.detail


def test_a_user_whose_messages_are_not_all_applied_yet_keeps_the_order() -> None:
    assert credits_in_order(SENT, {"u1": [("o1", "order"), ("o3", "order")]}).ok


def observed(**changes: object) -> Observed:
    orders = {"o1": ("u1", Decimal("10.50")), "o2": ("u1", Decimal("3.00")), "o4": ("u2", Decimal("7.99"))}
    base = {"orders": orders, "visible": ["o1", "o2", "o4"], "balances": {"u1": 3, "u2": 0}, "credited_orders": 3,
            "failed_users": set(), "refunded": frozenset({"o1", "o4"}),
            "sent": {"u1": [("o1", "order"), ("o2", "order"), ("o1", "refund")], "u2": [("o4", "order"), ("o4", "refund")]},
            "applied": {"u1": [("o1", "order"), ("o2", "order"), ("o1", "refund")], "u2": [("o4", "order"), ("o4", "refund")]}}
    return Observed(**{**base, **changes})  # type: ignore[arg-type]


def test_check_all_takes_refunded_points_back_and_checks_the_apply_order() -> None:
    checks = {c.name: c for c in check_all(observed())}
    assert all(c.ok for c in checks.values()), [c.detail for c in checks.values() if not c.ok]
    assert checks["every committed order yields exactly one credit"].detail == "3 credits for 3 orders"
    assert "credits applied in order per user" in checks


def test_check_all_fails_the_order_row_on_a_refund_applied_first() -> None:
    applied = {"u1": [("o1", "refund"), ("o1", "order"), ("o2", "order")], "u2": [("o4", "order"), ("o4", "refund")]}
    checks = {c.name: c for c in check_all(observed(applied=applied))}
    assert not checks["credits applied in order per user"].ok


def test_without_the_sequences_there_is_no_order_row() -> None:
    names = [c.name for c in check_all(observed(sent=None, applied=None))]
    assert "credits applied in order per user" not in names


EARLY, ON_STATUS = "no delayed message delivered early", "every unpaid order is cancelled, no paid one is"


def verdict(rows: dict[str, tuple[str, int | None, int | None]], paid: set[str], refused: set[str] = frozenset(),
            unknown: set[str] = frozenset(), refunded: frozenset[str] = frozenset()) -> dict[str, bool]:
    return {c.name: c.ok for c in check_payments(PaymentsObserved(rows, set(paid), set(refused), set(unknown), refunded))}


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


def test_a_refunded_order_is_judged_by_its_refund_not_its_payment() -> None:
    rows = {"o1": ("refunded", 1_000, 1_001), "o2": ("refunded", 1_000, 1_001)}
    assert verdict(rows, paid={"o1"}, refunded=frozenset({"o1", "o2"})) == {EARLY: True, ON_STATUS: True}
    assert verdict(rows, paid={"o1"})[ON_STATUS] is False  # not refunded, a paid order must read paid


def test_one_line_joins_the_placements_to_the_committed_orders() -> None:
    outcomes = {"committed": 300, "pending check-back": 5, "crashed (recovered by restart + check-back)": 2,
                "rolled back (local transaction failed)": 10}
    assert committed_sum(outcomes, 307) == (
        "307 committed orders = 300 committed at once + 5 committed by a check-back (their end was dropped)"
        " + 2 committed before the service crashed (a check-back sent them); not orders: 10 rolled back (local transaction failed)")


def test_a_sum_that_does_not_hold_says_by_how_many() -> None:
    assert committed_sum({"committed": 3, "gave up (broker unavailable)": 1}, 4).endswith(
        "not orders: 1 gave up (broker unavailable); 1 more in the order database than placed")


def test_the_guarantees_are_titled_after_a_file_the_repository_has_and_its_section_lists_them() -> None:
    path, section = TITLE.removeprefix("guarantees (").removesuffix(")").split(", section ")
    design = (ROOT / path).read_text()
    assert f"\n## {section}. " in design and "Guarantees the whole system gives" in design


def detail(rows: dict[str, tuple[str, int | None, int | None]], released: dict[str, int]) -> str:
    [early, _] = check_payments(PaymentsObserved(rows, set(rows), set(), set(), frozenset(), released))
    return early.detail


def test_the_lateness_is_split_into_the_brokers_release_and_the_consumers_turn() -> None:
    rows = {"o1": ("paid", 10_000, 10_500), "o2": ("paid", 10_000, 42_000), "o3": ("paid", 10_000, 20_000)}
    released = {"o1": 10_020, "o2": 10_040, "o3": 10_030}
    assert detail(rows, released) == ("3/3 payment-due messages arrived, 0 before due; the broker released them p50 30 ms, max 40 ms"
                                      " after due, the order service's consumer took them p50 10.0 s, max 32.0 s after that")


def test_without_the_release_times_the_lateness_is_the_sum() -> None:
    assert detail({"o1": ("paid", 10_000, 10_500)}, {}).endswith("; arrived after due p50 500 ms, max 500 ms")
