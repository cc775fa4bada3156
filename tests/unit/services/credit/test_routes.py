"""The credit service's read API and health, over a fake ledger and a fake database probe."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, date, datetime

import httpx
import pytest
from fastapi import FastAPI

from halfmq.services import http_problems
from halfmq.services.credit.credit_service import CreditService
from halfmq.services.credit.routes import PROBLEM_STATUS, router
from tests.unit.services.fakes import FakeCreditLedger, broker_message


@pytest.fixture
def ledger() -> FakeCreditLedger:
    return FakeCreditLedger()


@pytest.fixture
def app(ledger: FakeCreditLedger) -> FastAPI:
    app = FastAPI()
    app.state.credits = CreditService(ledger, points_per_unit=1)
    app.state.database_probe = lambda: True
    http_problems.install(app, PROBLEM_STATUS)
    app.include_router(router)
    return app


@pytest.fixture
async def client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://credit.test") as client:
        yield client


async def test_a_user_reads_balance_count_and_records(app: FastAPI, client: httpx.AsyncClient) -> None:
    message = broker_message({"order_id": "o1", "user_id": "u1", "amount": "12.99"})
    await app.state.credits.handle(message)
    body = (await client.get("/users/u1/credits")).json()
    [record] = body.pop("records")
    assert body == {"user_id": "u1", "balance": 12, "credits": 1}
    assert {k: record[k] for k in ("order_id", "points", "amount", "message_id")} == {
        "order_id": "o1", "points": 12, "amount": "12.99", "message_id": message.msg_id}


async def test_a_users_ledger_lists_credits_and_refunds_in_the_order_applied_a_page_at_a_time(app: FastAPI, client: httpx.AsyncClient) -> None:
    for body in ({"order_id": "o1", "user_id": "u1", "amount": "3.00"}, {"order_id": "o2", "user_id": "u1", "amount": "5.00"},
                 {"order_id": "o1", "user_id": "u1", "amount": "3.00", "kind": "refund"}):
        await app.state.credits.handle(broker_message(body))
    first = (await client.get("/users/u1/ledger", params={"limit": 2})).json()
    assert [(e["seq"], e["order_id"], e["kind"], e["points"]) for e in first["entries"]] == [(1, "o1", "order", 3), (2, "o2", "order", 5)]
    rest = (await client.get("/users/u1/ledger", params={"after_seq": first["next_after_seq"], "limit": 2})).json()
    assert [(e["seq"], e["kind"], e["points"]) for e in rest["entries"]] == [(3, "refund", -3)] and rest["next_after_seq"] is None


async def test_a_user_without_credits_reads_zero(client: httpx.AsyncClient) -> None:
    assert (await client.get("/users/nobody/credits")).json() == {"user_id": "nobody", "balance": 0, "credits": 0, "records": []}


async def test_a_too_long_user_id_is_a_400_problem(client: httpx.AsyncClient) -> None:
    resp = await client.get(f"/users/{'x' * 65}/credits")
    assert resp.status_code == 400 and resp.json()["code"] == "INVALID_REQUEST"


async def test_the_summary_reads_empty_then_the_published_run(ledger: FakeCreditLedger, client: httpx.AsyncClient) -> None:
    assert (await client.get("/credits/summary")).json() == {"computed_at": None, "users": [], "days": []}
    at = datetime(2026, 11, 22, 3, 0, tzinfo=UTC)
    ledger.publish_summary(at, {"u1": 7}, {date(2026, 11, 21): 7})
    assert (await client.get("/credits/summary")).json() == {
        "computed_at": at.isoformat(),
        "users": [{"user_id": "u1", "points": 7, "orders": 1, "first_credit_at": at.isoformat(), "last_credit_at": at.isoformat()}],
        "days": [{"day": "2026-11-21", "points": 7, "orders": 1}],
    }


async def test_health_is_unhealthy_until_the_consumer_runs(app: FastAPI, client: httpx.AsyncClient) -> None:
    resp = await client.get("/healthz")
    assert resp.status_code == 503 and resp.json()["consuming"] is False
    app.state.consumer_task = asyncio.get_running_loop().create_future()  # pending: the consumer is running
    resp = await client.get("/healthz")
    assert resp.status_code == 200
    assert resp.json() == {"status": "ok", "database": "ok", "migrated": True, "consuming": True,
                           "credited": 0, "duplicates": 0, "poison": 0, "errors": 0}
    app.state.consumer_task.cancel()
