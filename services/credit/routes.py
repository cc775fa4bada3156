"""HTTP routes of the credit service: the read API and health; the one map from domain error to status."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import JSONResponse

from ..health import health
from ..http_problems import ProblemStatus
from .credit_service import CreditService

# No credit error reaches HTTP today: PoisonMessage is the consumer's (a nack, then the DLQ).
PROBLEM_STATUS: ProblemStatus = {}

router = APIRouter()


def _service(request: Request) -> CreditService:
    return request.app.state.credits


@router.get("/users/{user_id}/credits")
async def user_credits(request: Request, user_id: str = Path(min_length=1, max_length=64)) -> JSONResponse:
    account, records, credits = await _service(request).account(user_id)
    return JSONResponse({
        "user_id": user_id,
        "balance": account.balance if account else 0,
        "credits": credits,
        "records": [
            {"order_id": r.order_id, "points": r.points, "amount": str(r.amount), "message_id": r.message_id, "created_at": r.created_at.isoformat(),
             "kind": r.kind, "seq": r.seq}
            for r in records
        ],
    })


@router.get("/users/{user_id}/ledger")
async def user_ledger(request: Request, user_id: str = Path(min_length=1, max_length=64), after_seq: int = Query(0, ge=0, le=2**62),
                      limit: int = Query(500, ge=1, le=1000)) -> JSONResponse:
    """The user's credits and refunds in the order the service applied them (``seq``), a page at a time."""
    entries = await _service(request).ledger(user_id, after_seq, limit)
    return JSONResponse({
        "user_id": user_id,
        "entries": [{"seq": r.seq, "order_id": r.order_id, "kind": r.kind, "points": r.points, "message_id": r.message_id} for r in entries],
        "next_after_seq": entries[-1].seq if len(entries) == limit else None,
    })


@router.get("/credits/summary")
async def summary(request: Request) -> JSONResponse:
    found = await _service(request).summary()
    if found is None:
        return JSONResponse({"computed_at": None, "users": [], "days": []})
    run, users, days = found
    return JSONResponse({
        "computed_at": run.computed_at.isoformat(),
        "users": [
            {"user_id": u.user_id, "points": u.points, "orders": u.orders,
             "first_credit_at": u.first_credit_at.isoformat(), "last_credit_at": u.last_credit_at.isoformat()}
            for u in users
        ],
        "days": [{"day": d.day.isoformat(), "points": d.points, "orders": d.orders} for d in days],
    })


@router.get("/healthz")
async def healthz(request: Request) -> JSONResponse:
    def consuming() -> tuple[bool, Mapping[str, Any]]:
        task = getattr(request.app.state, "consumer_task", None)
        running = task is not None and not task.done()
        stats = _service(request).stats
        return running, {"consuming": running, "credited": stats.credited, "duplicates": stats.duplicates,
                         "poison": stats.poison, "errors": stats.errors}

    return await health(request.app.state.database_probe, consuming)
