"""What an ORDER_TOPIC message means for the ledger, as pure functions."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

import orjson

from ..errors import ServiceError
from ..order_events import KIND, OrderEvent, event_of


class PoisonMessage(ServiceError, ValueError):
    """The message can never be credited (bad JSON, missing fields, bad amount): retrying cannot help."""

    code = "POISON_MESSAGE"


@dataclass(frozen=True)
class CreditCommand:
    order_id: str
    user_id: str
    amount: Decimal
    event: OrderEvent = OrderEvent.ORDER

    @property
    def inbox_key(self) -> str:
        """What the inbox keys the credit by: the order id for its credit, ``refund:{order id}`` for its refund (each once)."""
        return self.order_id if self.event is OrderEvent.ORDER else f"{self.event.value}:{self.order_id}"


def credit_points(cmd: CreditCommand, points_per_unit: int) -> int:
    """An order's points, or a refund's: the same points taken back."""
    points = points_for(cmd.amount, points_per_unit)
    return points if cmd.event is OrderEvent.ORDER else -points


def apply_sequence(users: list[str], applied: dict[str, int]) -> list[int]:
    """Each message's place in its user's sequence, for a batch applied in this order (``users``, one per message)
    whose users have ``applied`` messages applied in all, the batch's included."""
    left = Counter(users)
    seqs = []
    for user in users:
        seqs.append(applied[user] - left[user] + 1)
        left[user] -= 1
    return seqs


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
    event = event_of(data)
    if event is None:
        raise PoisonMessage(f"{KIND} {data.get(KIND)!r} is none of {[e.value for e in OrderEvent]}")
    return CreditCommand(order_id, user_id, amount, event)
