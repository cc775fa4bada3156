"""HTTP routes of the order service: parse, call OrderService, shape the answer; the one map from domain error to status."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Header, Query, Request
from fastapi.responses import JSONResponse

from ..health import health
from ..http_problems import ProblemStatus
from .errors import (
    BrokerNotDurable,
    BrokerUnreachable,
    FaultsDisabled,
    IdempotencyKeyReused,
    LocalTransactionFailed,
    OrderAlreadyRefunded,
    OrderCancelled,
    OrderNotFound,
    OrderNotSent,
    UnknownFault,
)
from .models import Order
from .order_service import OrderService, Placed
from .rules import MAX_PAGE_OFFSET
from .schemas import OrderCreate


class UserPage:
    """One page of a user's orders, as both listings (``/orders``, ``/payments``) take it from the query."""

    def __init__(self, user_id: str = Query(min_length=1, max_length=64), limit: int = Query(50, ge=1, le=500),
                 offset: int = Query(0, ge=0, le=MAX_PAGE_OFFSET)) -> None:
        self.user_id, self.limit, self.offset = user_id, limit, offset

    async def of(self, service: OrderService) -> tuple[list[Order], int | None]:
        """The page's orders and where the next starts (None on the last page)."""
        orders = await service.orders_of(self.user_id, self.limit, self.offset)
        return orders, (self.offset + len(orders) if len(orders) == self.limit else None)


PROBLEM_STATUS: ProblemStatus = {
    UnknownFault: 400,
    FaultsDisabled: 403,
    OrderNotFound: 404,
    IdempotencyKeyReused: 409,
    OrderAlreadyRefunded: 409,
    OrderCancelled: 409,
    OrderNotSent: 409,
    BrokerUnreachable: 503,
    BrokerNotDurable: 503,
    LocalTransactionFailed: 503,
}

router = APIRouter()


def order_view(order: Order) -> dict:
    return {
        "order_id": order.order_id,
        "user_id": order.user_id,
        "amount": str(order.amount),
        "status": order.status,
        "created_at": order.created_at.isoformat(),
    }


def placed_view(placed: Placed) -> dict:
    """A placed order's answer: the order, and where its message stands (the route and the fast path send the same)."""
    return order_view(placed.order) | {"message_state": placed.message_state, "transaction_id": placed.transaction_id}


def _service(request: Request) -> OrderService:
    return request.app.state.orders


@router.post("/orders", status_code=201)
async def create_order(
    body: OrderCreate,
    request: Request,
    idempotency_key: str | None = Header(default=None, min_length=1, max_length=255),
    x_fault: str | None = Header(default=None),
) -> JSONResponse:
    service = _service(request)
    placed = await service.place(body, idempotency_key, service.parse_fault(x_fault))
    payload = placed_view(placed)
    headers = {"Idempotent-Replayed": "true"} if placed.replayed else {}
    return JSONResponse(payload, status_code=200 if placed.replayed else 201, headers=headers)


@router.get("/orders/{order_id}")
async def get_order(order_id: str, request: Request) -> JSONResponse:
    return JSONResponse(order_view(await _service(request).get(order_id)))


@router.post("/orders/{order_id}/refund", status_code=201)
async def refund_order(order_id: str, request: Request) -> JSONResponse:
    """The order's refund, sent in its user's message group after the order; 409 if refunded already or not yet sent."""
    refunded = await _service(request).refund(order_id)
    return JSONResponse(placed_view(refunded), status_code=201)


@router.get("/orders")
async def list_orders(request: Request, page: Annotated[UserPage, Depends()]) -> JSONResponse:
    orders, next_offset = await page.of(_service(request))
    return JSONResponse({"orders": [order_view(o) for o in orders], "next_offset": next_offset})


@router.post("/orders/{order_id}/pay")
async def pay_order(order_id: str, request: Request) -> JSONResponse:
    """Mark the order paid (idempotent); 409 ORDER_CANCELLED once its payment fell due unpaid."""
    return JSONResponse(order_view(await _service(request).pay(order_id)))


def payment_view(order: Order) -> dict:
    """An order's payment: paid when, or when its payment-due message fell due and arrived (epoch ms)."""
    return {
        "order_id": order.order_id,
        "status": order.status,
        "paid_at": order.paid_at.isoformat() if order.paid_at else None,
        "payment_due_ms": order.payment_due_ms,
        "payment_due_seen_ms": order.payment_due_seen_ms,
        "payment_due_released_ms": order.payment_due_released_ms,
    }


@router.get("/payments")
async def list_payments(request: Request, page: Annotated[UserPage, Depends()]) -> JSONResponse:
    """A user's orders' payments, as ``GET /orders`` pages them, and after how long an unpaid order is cancelled."""
    service = _service(request)
    orders, next_offset = await page.of(service)
    delay = service.payment_due.delay_seconds if service.payment_due is not None else None
    return JSONResponse({"payments": [payment_view(o) for o in orders], "next_offset": next_offset, "payment_due_seconds": delay})


@router.get("/healthz")
async def healthz(request: Request) -> JSONResponse:
    return await health(request.app.state.database_probe)
