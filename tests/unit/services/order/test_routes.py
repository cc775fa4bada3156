"""The order service's edge: each domain error becomes its RFC 9457 problem, from the one table in routes.py."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from fastapi import FastAPI

from halfmq.services import http_problems
from halfmq.services.order import errors
from halfmq.services.order.fast_path import PlaceOrderFastPath
from halfmq.services.order.order_service import OrderService
from halfmq.services.order.routes import PROBLEM_STATUS, router
from tests.unit.services.fakes import FakeBarrier


def order_app(service: OrderService, fast_path: bool) -> FastAPI:
    app = FastAPI()
    app.state.orders = service
    http_problems.install(app, PROBLEM_STATUS)
    app.include_router(router)
    if fast_path:  # as create_app has it
        app.add_middleware(PlaceOrderFastPath, service=lambda: app.state.orders, statuses=PROBLEM_STATUS)
    return app


@pytest.fixture(params=[False, True], ids=["route", "fast_path"])
async def client(service: OrderService, request: pytest.FixtureRequest) -> AsyncIterator[httpx.AsyncClient]:
    app = order_app(service, request.param)
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


REFUSED = [
    ({"json": {"user_id": "u1", "amount": "0"}}, {}),
    ({"json": {"user_id": "u1", "amount": "1.234"}}, {}),
    ({"json": {"user_id": "", "amount": "1"}}, {}),
    ({"json": {"user_id": "u1"}}, {}),
    ({"json": {"user_id": "u1", "amount": "1", "extra": True}}, {}),
    ({"json": {"user_id": "u1", "amount": -5}}, {}),
    ({"json": {"user_id": "bad id", "amount": "1"}}, {}),
    ({"json": {"user_id": "u1", "amount": "\uff14\uff12.\uff11\uff10"}}, {}),  # full-width digits
    ({"json": ["u1", "1.00"]}, {}),
    ({"content": b'{"user_id": "u1", "amount": '}, {"Content-Type": "application/json"}),
    ({"content": b"user_id=u1&amount=1"}, {"Content-Type": "application/x-www-form-urlencoded"}),
    ({"json": {"user_id": "u1", "amount": "1.00"}}, {"Idempotency-Key": "k" * 256}),
    ({"json": {"user_id": "u1", "amount": "1.00"}}, {"X-Fault": "set-fire"}),
    ({"json": {"user_id": "u1", "amount": "1.00"}}, {"X-Fault": "fail-local-tx"}),
]


@pytest.mark.parametrize(("kwargs", "headers"), REFUSED)
async def test_the_fast_path_refuses_an_order_exactly_as_the_route_does(service: OrderService, sender: FakeBarrier,
                                                                         kwargs, headers) -> None:
    answers = []
    for fast_path in (False, True):
        transport = httpx.ASGITransport(app=order_app(service, fast_path))
        async with httpx.AsyncClient(transport=transport, base_url="http://order.test") as client:
            resp = await client.post("/orders", headers=headers, **kwargs)
        answers.append((resp.status_code, resp.headers["content-type"], resp.json()))
    assert answers[0] == answers[1]
    assert 400 <= answers[0][0] < 600 and answers[0][1] == "application/problem+json"


async def test_the_fast_path_answers_a_placed_order_as_the_route_does(service: OrderService, monkeypatch: pytest.MonkeyPatch) -> None:
    taken: list[object] = []
    place = PlaceOrderFastPath._place

    async def counted(self, *args):
        taken.append(args)
        await place(self, *args)

    monkeypatch.setattr(PlaceOrderFastPath, "_place", counted)
    answers = []
    for fast_path in (False, True):
        transport = httpx.ASGITransport(app=order_app(service, fast_path))
        async with httpx.AsyncClient(transport=transport, base_url="http://order.test") as client:
            placed = await client.post("/orders", json={"user_id": "u1", "amount": "2.5"},
                                       headers={"Idempotency-Key": f"key-{fast_path}", "Content-Type": "application/json; charset=utf-8"})
            again = await client.post("/orders", json={"user_id": "u1", "amount": "2.50"}, headers={"Idempotency-Key": f"key-{fast_path}"})
        body = placed.json()
        assert again.json() == body and again.headers["Idempotent-Replayed"] == "true"
        answers.append((placed.status_code, again.status_code, placed.headers["content-type"], sorted(body), body["amount"],
                        "idempotent-replayed" in placed.headers))
    assert answers[0] == answers[1] == (201, 200, "application/json", sorted(answers[0][3]), "2.50", False)
    assert len(taken) == 2, "the fast path answered both of its requests"


async def test_the_fast_path_does_not_change_the_openapi_document(service: OrderService) -> None:
    assert order_app(service, True).openapi() == order_app(service, False).openapi()


async def test_a_full_width_amount_is_a_400_problem_and_places_nothing(client: httpx.AsyncClient, repo) -> None:
    resp = await client.post("/orders", json={"user_id": "u1", "amount": "\uff14\uff12.\uff11\uff10"})
    assert (resp.status_code, resp.headers["content-type"], resp.json()["code"]) == (400, "application/problem+json", "INVALID_REQUEST")
    assert (await client.get("/orders", params={"user_id": "u1"})).json()["orders"] == []


@pytest.mark.parametrize("offset", [str(10**30), "-1", str(10**12 + 1)])
async def test_a_page_offset_out_of_range_is_a_400_problem(client: httpx.AsyncClient, offset: str) -> None:
    resp = await client.get("/orders", params={"user_id": "u1", "offset": offset})
    assert (resp.status_code, resp.headers["content-type"], resp.json()["code"]) == (400, "application/problem+json", "INVALID_REQUEST")


async def test_a_refund_is_a_201_then_a_409_and_an_unknown_order_a_404(client: httpx.AsyncClient) -> None:
    placed = (await client.post("/orders", json={"user_id": "u1", "amount": "1.00"})).json()
    first = await client.post(f"/orders/{placed['order_id']}/refund")
    again = await client.post(f"/orders/{placed['order_id']}/refund")
    unknown = await client.post("/orders/nope/refund")
    assert first.status_code == 201 and first.json()["status"] == "refunded" and first.json()["message_state"] == "committed"
    assert (again.status_code, again.json()["code"]) == (409, "ORDER_ALREADY_REFUNDED")
    assert again.headers["content-type"] == "application/problem+json"
    assert (unknown.status_code, unknown.json()["code"]) == (404, "ORDER_NOT_FOUND")
