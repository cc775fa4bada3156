"""An order's payment with fakes: its payment-due message goes with the order, and whichever of pay or due comes first wins."""

from __future__ import annotations

from decimal import Decimal

import orjson
import pytest

from halfmq.client import Message
from halfmq.services.order.errors import OrderCancelled, OrderNotFound
from halfmq.services.order.order_service import OrderService
from halfmq.services.order.payments import PaymentDue, PaymentDueSender
from halfmq.services.order.schemas import OrderCreate
from tests.unit.services.fakes import FakeBarrier, FakeOrderRepository

ORDER = OrderCreate(user_id="u1", amount=Decimal("12.50"))
NOW_MS = 1_800_000_000_000


def due_message(order_id: str, due_ms: int | None, released_ms: int = 0) -> Message:
    return Message(msg_id="m1", topic="ORDER_PAYMENT_DUE", queue_id=0, queue_offset=0, commit_log_offset=0, born_timestamp=0,
                   store_timestamp=released_ms, body=orjson.dumps({"order_id": order_id, "user_id": "u1"}).decode(), deliver_at_ms=due_ms)


async def test_an_order_is_sent_with_its_payment_due_message_delayed_by_the_setting(service: OrderService, sender: FakeBarrier) -> None:
    service.payment_due = PaymentDueSender("ORDER_PAYMENT_DUE", 10)
    placed = await service.place(ORDER, None, None)
    [(topic, message)] = sender.also[placed.order.order_id]  # one barrier send, one record: the same transaction
    assert (topic, message.delay_ms, message.keys, message.tag) == ("ORDER_PAYMENT_DUE", 10_000, [placed.order.order_id], "payment_due")
    assert orjson.loads(message.body) == {"order_id": placed.order.order_id, "user_id": "u1"}


async def test_paying_twice_answers_paid_and_a_payment_due_then_leaves_the_order_paid(service: OrderService, repo: FakeOrderRepository) -> None:
    order = (await service.place(ORDER, None, None)).order
    assert (await service.pay(order.order_id)).status == "paid"
    assert (await service.pay(order.order_id)).status == "paid"
    status = await PaymentDue(repo, clock=lambda: NOW_MS / 1000 + 0.25).handle(due_message(order.order_id, NOW_MS, NOW_MS + 20))
    assert status == "paid"
    assert (order.payment_due_ms, order.payment_due_released_ms, order.payment_due_seen_ms) == (NOW_MS, NOW_MS + 20, NOW_MS + 250)


async def test_an_unpaid_order_is_cancelled_when_its_payment_falls_due_and_can_no_longer_be_paid(service: OrderService, repo) -> None:
    order = (await service.place(ORDER, None, None)).order
    handler = PaymentDue(repo, clock=lambda: NOW_MS / 1000)
    assert await handler.handle(due_message(order.order_id, NOW_MS)) == "cancelled"
    assert await handler.handle(due_message(order.order_id, NOW_MS)) == "cancelled"  # a redelivery changes nothing
    with pytest.raises(OrderCancelled) as refused:
        await service.pay(order.order_id)
    assert refused.value.code == "ORDER_CANCELLED"
    with pytest.raises(OrderNotFound):
        await service.pay("nope")


async def test_a_payment_due_for_an_unknown_order_is_passed_over(repo: FakeOrderRepository) -> None:
    assert await PaymentDue(repo).handle(due_message("nope", NOW_MS)) is None
