"""What an ORDER_TOPIC message says: the one contract between the order service, which sends them, and the
credit service, which applies them (the services do not import each other; both import this).

An order's message and its refund's go to the same message group, the user's, so the credit service
applies each user's messages in the order the order service sent them: a refund never before its order.
A message without ``kind`` is an order (the body of every order sent before refunds existed).
"""

from __future__ import annotations

from enum import Enum

KIND = "kind"  # the body's field naming what happened to the order


class OrderEvent(str, Enum):
    ORDER = "order"
    REFUND = "refund"


REFUND_TAG = "order_refunded"


def event_of(body: dict[str, object]) -> OrderEvent | None:
    """What the message body says happened (an order when it does not say), or None for a kind nobody sends."""
    try:
        return OrderEvent(body.get(KIND, OrderEvent.ORDER.value))
    except ValueError:
        return None
