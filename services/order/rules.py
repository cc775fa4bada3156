"""The order service's decisions, as pure functions."""

from __future__ import annotations

from decimal import Decimal
from enum import Enum

MAX_AMOUNT = Decimal("1000000000")


class CheckAnswer(str, Enum):
    COMMIT = "commit"
    ROLLBACK = "rollback"
    UNKNOWN = "unknown"


def check_back_answer(order_found: bool, half_age_seconds: float, local_tx_timeout: float) -> CheckAnswer:
    """The broker asks "did order X commit?".

    Found: commit. Not found while the local transaction may still be running:
    unknown (ask again later). Not found and older than any local transaction can
    take: it never committed, roll the message back.
    """
    if order_found:
        return CheckAnswer.COMMIT
    if half_age_seconds < local_tx_timeout:
        return CheckAnswer.UNKNOWN
    return CheckAnswer.ROLLBACK


def fingerprint(user_id: str, amount: Decimal) -> str:
    """What an Idempotency-Key is bound to: a retry must ask for the same order."""
    return f"{user_id}|{amount.quantize(Decimal('0.01'))}"
