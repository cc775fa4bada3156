"""An order's payment: the delayed "payment due" message its local transaction sends, and what its arrival decides.

Each order's barrier send carries, through halfmq's ``also``, a second message on ``payment_due_topic`` delayed by
``payment_due_seconds``: committed or rolled back with the order, due relative to the commit. The service consumes
that topic as its own consumer group; ``PaymentDue.handle`` cancels the order if it is still unpaid (a paid order is
left alone) and records when the message fell due and when it arrived. ``pay`` and the cancel are conditional
updates of one row, so whichever comes first wins and the other sees it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from halfmq.client import Message, OutgoingMessage, outgoing
from halfmq.client.messages import message_json

from .errors import OrderCancelled, OrderNotFound
from .models import CANCELLED, Order
from .repository import NewOrder

log = logging.getLogger(__name__)

PAYMENT_DUE_TAG = "payment_due"


class PaymentStore(Protocol):
    """The two conditional updates of an order's payment (``OrderRepository``'s)."""

    def pay(self, order_id: str, now: datetime) -> Order | None: ...

    def payment_fell_due(self, order_id: str, due_ms: int | None, seen_ms: int, released_ms: int | None = None) -> Order | None: ...


@dataclass(frozen=True)
class PaymentDueSender:
    """Where and how late each order's "payment due" message goes."""

    topic: str
    delay_seconds: float

    def companions(self, new: NewOrder) -> list[tuple[str, OutgoingMessage]]:
        """The ``also`` of an order's barrier send: its payment-due message (its key: the order id)."""
        body = {"order_id": new.order_id, "user_id": new.user_id}
        message = outgoing(body, keys=[new.order_id], tag=PAYMENT_DUE_TAG, delay=self.delay_seconds)
        return [(self.topic, message)]


def payable(order_id: str, order: Order | None) -> Order:
    """The answer to a payment, from the order as the payment left it: paid (now or before), or why not."""
    if order is None:
        raise OrderNotFound(f"no order {order_id!r}")
    if order.status == CANCELLED:
        raise OrderCancelled(f"order {order_id!r} was cancelled: its payment fell due unpaid")
    return order


class PaymentDue:
    """The payment-due topic's handler: an unpaid order is cancelled; its due time and arrival are recorded."""

    def __init__(self, store: PaymentStore, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self._clock = clock

    async def handle(self, message: Message) -> str | None:
        """The order's status once its payment fell due (None: no such order; acked, since it can never appear)."""
        seen_ms = int(self._clock() * 1000)
        order_id = str(message_json(message)["order_id"])
        # the released message's store time is when the broker's timer released it: lateness split into the broker's and ours
        order = await asyncio.to_thread(self.store.payment_fell_due, order_id, message.deliver_at_ms, seen_ms, message.store_timestamp)
        if order is None:
            log.warning("payment due for order %s, which does not exist", order_id)
            return None
        if message.deliver_at_ms is not None and seen_ms < message.deliver_at_ms:
            log.error("payment-due message of order %s arrived %d ms early", order_id, message.deliver_at_ms - seen_ms)
        return order.status
