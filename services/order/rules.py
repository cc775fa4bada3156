"""The order service's decisions, as pure functions."""

from __future__ import annotations

from decimal import Decimal

MAX_AMOUNT = Decimal("1000000000")


def fingerprint(user_id: str, amount: Decimal) -> str:
    """What an Idempotency-Key is bound to: a retry must ask for the same order."""
    return f"{user_id}|{amount.quantize(Decimal('0.01'))}"
