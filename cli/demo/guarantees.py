"""The guarantees of docs/design.md section 1 ("The story"), checked on what the demo observed. Pure functions."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal

from halfmq.services.order_events import OrderEvent

# One message about an order: (order id, kind: "order" or "refund"), as the order service sent it on
# ORDER_TOPIC and as the credit service applied it.
Entry = tuple[str, str]


TITLE = "guarantees (docs/design.md, section 1)"

# How the driver names each placement's outcome (cli/demo/driver.py), and whether the order it placed committed.
COMMITTED_OUTCOMES = {
    "committed": "committed at once",
    "pending check-back": "committed by a check-back (their end was dropped)",
    "crashed (recovered by restart + check-back)": "committed before the service crashed (a check-back sent them)",
}


def committed_sum(outcomes: dict[str, int], committed_orders: int) -> str:
    """The one line joining the placements to the ledger's committed orders: which outcomes add up to them, which are
    not orders at all, and how many are unaccounted for when the sum does not hold."""
    parts = [f"{outcomes[name]} {meaning}" for name, meaning in COMMITTED_OUTCOMES.items() if outcomes.get(name)]
    line = f"{committed_orders} committed orders = " + (" + ".join(parts) if parts else "0")
    others = [f"{n} {name}" for name, n in sorted(outcomes.items()) if name not in COMMITTED_OUTCOMES and n]
    if others:
        line += f"; not orders: {', '.join(others)}"
    placed = sum(outcomes.get(name, 0) for name in COMMITTED_OUTCOMES)
    if placed != committed_orders:
        line += f"; {abs(committed_orders - placed)} {'more' if committed_orders > placed else 'fewer'} in the order database than placed"
    return line


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str


@dataclass(frozen=True)
class Observed:
    orders: dict[str, tuple[str, Decimal]]  # order_id -> (user_id, amount): every order the order DB holds
    visible: list[str]  # order ids of every message on ORDER_TOPIC, with repeats
    balances: dict[str, int]  # user -> credit balance
    credited_orders: int  # rows in the credit ledger (refunds not counted)
    failed_users: set[str]  # users whose every order failed its local transaction
    spark_points: int | None = None
    spark_users: dict[str, int] | None = None
    reconciliation: dict | None = None
    points_per_unit: int = 1
    refunded: frozenset[str] = frozenset()  # the orders refunded: each takes its points back
    sent: dict[str, list[Entry]] | None = None  # user -> the user's messages on ORDER_TOPIC, in the order sent
    applied: dict[str, list[Entry]] | None = None  # user -> the credit service's ledger, in the order applied (seq)


def points(amount: Decimal, per_unit: int) -> int:
    return int(amount // 1) * per_unit


def check_all(o: Observed) -> list[Check]:
    visible = Counter(o.visible)
    expected_by_user: Counter[str] = Counter()
    for user, amount in o.orders.values():
        expected_by_user[user] += points(amount, o.points_per_unit)
    for oid in o.refunded:
        user, amount = o.orders[oid]
        expected_by_user[user] -= points(amount, o.points_per_unit)
    missing = [oid for oid in o.orders if visible[oid] == 0]
    doubled = [oid for oid, n in visible.items() if n > 1]
    strangers = [oid for oid in visible if oid not in o.orders]
    failed_orders = [oid for oid, (user, _) in o.orders.items() if user in o.failed_users]
    wrong_balance = {u: (o.balances.get(u, 0), p) for u, p in expected_by_user.items() if o.balances.get(u, 0) != p}
    checks = [
        Check(
            "every committed order reaches ORDER_TOPIC",
            not missing,
            f"{len(o.orders) - len(missing)}/{len(o.orders)} delivered"
            + (f"; missing {missing[:3]}" if missing else ""),
        ),
        Check(
            "each committed order is delivered once",
            not doubled,
            "no duplicates" if not doubled else f"{len(doubled)} doubled, e.g. {doubled[:3]}",
        ),
        Check(
            "a failed local transaction is never visible",
            not strangers and not failed_orders,
            "no message without an order"
            if not strangers and not failed_orders
            else f"{len(strangers)} stray messages, {len(failed_orders)} failed orders stored",
        ),
        Check(
            "every committed order yields exactly one credit",
            o.credited_orders == len(o.orders) and not wrong_balance,
            f"{o.credited_orders} credits for {len(o.orders)} orders"
            + (f"; wrong balances {dict(list(wrong_balance.items())[:3])}" if wrong_balance else ""),
        ),
    ]
    if o.sent is not None and o.applied is not None:
        checks.append(credits_in_order(o.sent, o.applied))
    if o.spark_points is not None:
        total = sum(expected_by_user.values())
        users_ok = o.spark_users is None or all(o.spark_users.get(u, 0) == p for u, p in expected_by_user.items())
        checks.append(
            Check(
                "Spark totals equal the committed orders' credits",
                o.spark_points == total and users_ok,
                f"Spark {o.spark_points} points, orders {total}",
            )
        )
    if o.reconciliation is not None:
        r = o.reconciliation
        clean = not r.get("missing_credits") and not r.get("orphan_credits") and not r.get("balance_mismatches")
        checks.append(
            Check(
                "reconciliation is clean",
                clean,
                f"missing {len(r.get('missing_credits', []))}, orphan {len(r.get('orphan_credits', []))}, "
                f"mismatched balances {len(r.get('balance_mismatches', []))}",
            )
        )
    return checks


def credits_in_order(sent: dict[str, list[Entry]], applied: dict[str, list[Entry]]) -> Check:
    """Per user, the credit service applied the messages in the order they were sent, and each refund after its order.

    ``sent``: each user's messages in send order (their message group's queue order); ``applied``: each
    user's ledger in the order the credit service applied it. A message applied before one sent ahead of it
    *overtook* it; a refund applied while its order was not yet credited came *before its order*; an entry
    of the ledger that is not among the messages sent was *never sent*.
    """
    overtaken: list[str] = []
    early_refunds: list[str] = []
    unsent: list[str] = []
    entries = refunds = 0
    for user, done in applied.items():
        place = {entry: i for i, entry in enumerate(sent.get(user, []))}
        credited: set[str] = set()
        last = -1
        for order_id, kind in done:
            entries += 1
            if kind == OrderEvent.REFUND.value:
                refunds += 1
                if order_id not in credited:
                    early_refunds.append(order_id)
            else:
                credited.add(order_id)
            at = place.get((order_id, kind))
            if at is None:
                unsent.append(f"{kind} {order_id}")
                continue
            if at < last:
                overtaken.append(f"{kind} {order_id}")
            last = max(last, at)
    ok = not overtaken and not early_refunds and not unsent
    if ok:
        detail = f"{entries} credits of {len(applied)} users in send order; {refunds} refunds after their orders"
    else:
        detail = (f"{len(overtaken)} applied before a message sent ahead of them, e.g. {overtaken[:3]}; "
                  f"{len(early_refunds)} refunds before their order, e.g. {early_refunds[:3]}; "
                  f"{len(unsent)} applied but never sent, e.g. {unsent[:3]}")
    return Check("credits applied in order per user", ok, detail)

@dataclass(frozen=True)
class PaymentsObserved:
    """Each committed order's payment as the order service recorded it, and what the driver did about it."""

    rows: dict[str, tuple[str, int | None, int | None]]  # order_id -> (status, payment due ms, payment-due message first seen ms)
    paid: set[str]  # payments the order service accepted
    refused: set[str]  # payments answered 409 ORDER_CANCELLED (their payment had fallen due)
    unknown: set[str]  # payments that got no answer: either outcome is right
    refunded: frozenset[str] = frozenset()  # orders refunded since: their status is the refund's
    released: dict[str, int] = field(default_factory=dict)  # order_id -> when the broker released its payment-due message (ms)


def _spread(values: list[int]) -> str:
    """``p50 X, max Y`` of ``values`` (ms), in seconds past a second."""
    ordered = sorted(values)
    return f"p50 {_ms(ordered[len(ordered) // 2])}, max {_ms(ordered[-1])}"


def _ms(value: int) -> str:
    return f"{value} ms" if abs(value) < 1000 else f"{value / 1000:.1f} s"


def lateness(p: PaymentsObserved) -> str:
    """How late the payment-due messages arrived, split where it was spent: the broker's timer (released - due) and
    the order service's consumer (seen - released: a burst of payments falling due together waits its turn in the
    consumer's receive batches, a few handled at a time, beside the service's other work). Without release times,
    the sum. In the demo the broker releases within milliseconds; the seconds are the order service's: the demo
    crashes it twice (crash after commit) and kill -9s the broker, so messages due while it restarts wait for it,
    and those its dying process had received wait out their invisible time (30 s) before they come again."""
    arrived = [(oid, due, seen) for oid, (_, due, seen) in p.rows.items() if due is not None and seen is not None]
    if not arrived:
        return ""
    timed = [(due, p.released[oid], seen) for oid, due, seen in arrived if oid in p.released]
    if len(timed) < len(arrived):
        return "; arrived after due " + _spread([seen - due for _, due, seen in arrived])
    return ("; the broker released them " + _spread([released - due for due, released, _ in timed]) + " after due"
            + ", the order service's consumer took them " + _spread([seen - released for _, released, seen in timed]) + " after that")


def check_payments(p: PaymentsObserved) -> list[Check]:
    """'No delayed message delivered early' and 'every unpaid order is cancelled, no paid one is'."""
    arrived = {oid: (due, seen) for oid, (_, due, seen) in p.rows.items() if seen is not None}
    early = [oid for oid, (due, seen) in arrived.items() if due is not None and seen < due]
    never = [oid for oid in p.rows if oid not in arrived]
    expected = {oid: "paid" if oid in p.paid else "cancelled" for oid in p.rows if oid not in p.unknown and oid not in p.refunded}
    wrong = [oid for oid, status in expected.items() if p.rows[oid][0] != status]
    unpaid = sum(1 for status in expected.values() if status == "cancelled")
    return [
        Check(
            "no delayed message delivered early",
            not early and not never,
            f"{len(arrived)}/{len(p.rows)} payment-due messages arrived, {len(early)} before due" + lateness(p)
            + (f"; never arrived {never[:3]}" if never else "") + (f"; early {early[:3]}" if early else ""),
        ),
        Check(
            "every unpaid order is cancelled, no paid one is",
            not wrong,
            f"{len(expected) - unpaid} paid, {unpaid} cancelled unpaid ({len(p.refused)} paid too late)"
            + (f"; wrong status {[(oid, p.rows[oid][0]) for oid in wrong[:3]]}" if wrong else ""),
        ),
    ]
