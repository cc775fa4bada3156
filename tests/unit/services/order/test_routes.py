"""The order service's edge: each domain error becomes its RFC 9457 problem, from the one table in routes.py."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from fastapi import FastAPI

from halfmq.services import http_problems
from halfmq.services.order import errors
from halfmq.services.order.order_service import OrderService
from halfmq.services.order.routes import PROBLEM_STATUS, router
from tests.unit.services.fakes import FakeBarrier


@pytest.fixture
async def client(service: OrderService) -> AsyncIterator[httpx.AsyncClient]:
    app = FastAPI()
    app.state.orders = service
    http_problems.install(app, PROBLEM_STATUS)
    app.include_router(router)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://order.test") as client:
        yield client


def test_every_order_error_has_a_status_and_its_own_code() -> None:
    classes = [c for c in vars(errors).values() if isinstance(c, type) and issubclass(c, errors.OrderError) and c is not errors.OrderError]
    assert set(classes) == set(PROBLEM_STATUS)
    assert len({c.code for c in classes}) == len(classes)


async def test_a_placed_order_is_a_201_and_its_replay_a_200(client: httpx.AsyncClient) -> None:
    first = await client.post("/orders", json={"user_id": "u1", "amount": "1.00"}, headers={"Idempotency-Key": "k"})
    again = await client.post("/orders", json={"user_id": "u1", "amount": "1.00"}, headers={"Idempotency-Key": "k"})
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.headers["Idempotent-Replayed"] == "true" and again.json() == first.json()
    read = await client.get(f"/orders/{first.json()['order_id']}")
    assert read.json()["amount"] == "1.00"


@pytest.mark.parametrize(("arrange", "headers", "status", "code", "retriable"), [
    (lambda s: setattr(s, "down", True), {}, 503, "BROKER_UNAVAILABLE", True),
    (lambda s: None, {"X-Fault": "fail-local-tx"}, 503, "LOCAL_TRANSACTION_FAILED", True),
    (lambda s: None, {"X-Fault": "set-fire"}, 400, "UNKNOWN_FAULT", False),
])
async def test_a_refused_order_is_its_problem(client: httpx.AsyncClient, sender: FakeBarrier, arrange, headers, status, code, retriable) -> None:
    arrange(sender)
    resp = await client.post("/orders", json={"user_id": "u1", "amount": "1.00"}, headers=headers)
    assert resp.status_code == status and resp.headers["content-type"] == "application/problem+json"
    body = resp.json()
    assert (body["code"], body["retriable"], body["status"], body["instance"]) == (code, retriable, status, "/orders")
    assert body["type"] == f"https://halfmq.dev/problems/{code.lower().replace('_', '-')}"


async def test_a_reused_key_is_a_409_and_an_unknown_order_a_404(client: httpx.AsyncClient) -> None:
    await client.post("/orders", json={"user_id": "u1", "amount": "1.00"}, headers={"Idempotency-Key": "k"})
    reused = await client.post("/orders", json={"user_id": "u1", "amount": "2.00"}, headers={"Idempotency-Key": "k"})
    assert (reused.status_code, reused.json()["code"]) == (409, "IDEMPOTENCY_KEY_REUSED")
    missing = await client.get("/orders/nope")
    assert (missing.status_code, missing.json()["code"], missing.json()["title"]) == (404, "ORDER_NOT_FOUND", "Order not found")
