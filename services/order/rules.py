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
