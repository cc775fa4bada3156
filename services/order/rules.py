"""The order service's decisions, as pure functions."""

from __future__ import annotations

from decimal import Decimal

MAX_AMOUNT = Decimal("1000000000")
# The largest page offset of GET /orders: far beyond any user's orders, and within every database's
# 64-bit OFFSET (SQLite raises OverflowError past 2**63, which had been a 500).
MAX_PAGE_OFFSET = 10**12


def fingerprint(user_id: str, amount: Decimal) -> str:
    """What an Idempotency-Key is bound to: a retry must ask for the same order."""
    return f"{user_id}|{amount.quantize(Decimal('0.01'))}"


def written_in_ascii(amount: object) -> bool:
    """An amount given as text must use ASCII digits: Decimal reads any script's digits ("４２.１０", "١٢"), an order does not."""
    return not isinstance(amount, str) or amount.isascii()


REFUNDED = "refunded"  # an order's status once its refund committed


def refund_key(order_id: str) -> str:
    """The refund's business key in the barrier's records: one refund per order, whoever asks twice."""
    return f"refund:{order_id}"


def order_sent(transaction_state: str | None) -> bool:
    """Whether an order's message is on ORDER_TOPIC, from its transaction's state at the broker.

    None: the broker no longer knows the transaction (it forgets resolved ones after its retention) or
    the barrier's record is purged: either way the order is long past its check-backs, and an order
    committed in the database has its message committed (the check-back answers COMMIT from the record).
    """
    return transaction_state in (None, "committed")
