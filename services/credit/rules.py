"""What an ORDER_TOPIC message means for the ledger, as pure functions."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

import orjson

from ..errors import ServiceError


class PoisonMessage(ServiceError, ValueError):
    """The message can never be credited (bad JSON, missing fields, bad amount): retrying cannot help."""

    code = "POISON_MESSAGE"


@dataclass(frozen=True)
class CreditCommand:
    order_id: str
    user_id: str
    amount: Decimal


def points_for(amount: Decimal, points_per_unit: int) -> int:
    """Whole units of the amount times the rate: 12.99 at 1 point per unit is 12 points."""
    return int(amount // 1) * points_per_unit


def parse_order_message(body: bytes) -> CreditCommand:
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise PoisonMessage(f"body is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise PoisonMessage("body is not a JSON object")
    missing = [f for f in ("order_id", "user_id", "amount") if not data.get(f)]
    if missing:
        raise PoisonMessage(f"missing fields: {missing}")
    order_id, user_id = data["order_id"], data["user_id"]
    if not isinstance(order_id, str) or not isinstance(user_id, str) or len(order_id) > 64 or len(user_id) > 64:
        raise PoisonMessage("order_id and user_id must be strings of at most 64 characters")
    try:
        amount = Decimal(str(data["amount"]))
    except (InvalidOperation, ValueError):
        raise PoisonMessage(f"amount {data['amount']!r} is not a number") from None
    if not amount.is_finite() or amount <= 0 or amount != amount.quantize(Decimal("0.01")):
        raise PoisonMessage(f"amount {data['amount']!r} must be positive with at most 2 decimals")
    return CreditCommand(order_id, user_id, amount)
