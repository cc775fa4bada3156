"""The credit service's app factory: the ORDER_TOPIC consumer plus a small read API."""

from __future__ import annotations

import asyncio
import logging
from contextlib import asynccontextmanager
from typing import AsyncIterator

from fastapi import FastAPI, Path, Request
from fastapi.responses import JSONResponse
from sqlalchemy import text

from halfmq.client import AsyncConsumer

from .. import http_problems
from ..credentials import secret_value
from ..database import create_db_engine, is_migrated, migrate
from .config import CreditSettings
from .credit_service import CreditService
from .repository import CreditRepository

log = logging.getLogger(__name__)


def create_app(settings: CreditSettings | None = None) -> FastAPI:
    settings = settings or CreditSettings()
    engine = create_db_engine(settings.database_url, settings.db_pool_size)
    repo = CreditRepository(engine)
    service = CreditService(repo, settings.points_per_unit,
                            settings.crash_after_commit_order if settings.faults_enabled else None,
                            settings.write_batch_max)
    consumer = AsyncConsumer(
        settings.broker_url, settings.consumer_group, settings.topic, service.handle,
        max_messages=settings.max_messages, invisible_seconds=settings.invisible_seconds,
        wait_seconds=settings.wait_seconds, concurrency=settings.consumer_concurrency,
        token=secret_value(settings.broker_token, settings.broker_token_file),
        verify=str(settings.broker_ca_file) if settings.broker_ca_file else None,
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await asyncio.to_thread(migrate, "credit", engine)
        task = asyncio.get_running_loop().create_task(consumer.run())
        app.state.consumer_task = task
        log.info("credit service consuming %s as %s from %s", settings.topic, settings.consumer_group, settings.broker_url)
        try:
            yield
        finally:
            consumer.stop()  # finishes in-flight credits and acks them; the rest become visible again
            await asyncio.gather(task, return_exceptions=True)
            await consumer.close()
            engine.dispose()

    app = FastAPI(title="halfmq credit service", lifespan=lifespan)
    http_problems.install(app)

    @app.get("/users/{user_id}/credits")
    async def user_credits(user_id: str = Path(min_length=1, max_length=64)) -> JSONResponse:
        account, records, credits = await asyncio.to_thread(repo.account, user_id)
        return JSONResponse({
            "user_id": user_id,
            "balance": account.balance if account else 0,
            "credits": credits,
            "records": [
                {"order_id": r.order_id, "points": r.points, "amount": str(r.amount), "message_id": r.message_id, "created_at": r.created_at.isoformat()}
                for r in records
            ],
        })

    @app.get("/credits/summary")
    async def summary() -> JSONResponse:
        found = await asyncio.to_thread(repo.current_summary)
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

    @app.get("/healthz")
    async def healthz(request: Request) -> JSONResponse:
        def probe() -> bool:
            with engine.connect() as conn:
                conn.execute(text("SELECT 1"))
            return is_migrated("credit", engine)

        try:
            migrated = await asyncio.to_thread(probe)
        except Exception as exc:
            return JSONResponse({"status": "unhealthy", "database": f"unreachable: {type(exc).__name__}"}, status_code=503)
        task = getattr(request.app.state, "consumer_task", None)
        consuming = task is not None and not task.done()
        ok = migrated and consuming
        stats = service.stats
        return JSONResponse({
            "status": "ok" if ok else "unhealthy", "database": "ok", "migrated": migrated, "consuming": consuming,
            "credited": stats.credited, "duplicates": stats.duplicates, "poison": stats.poison, "errors": stats.errors,
        }, status_code=200 if ok else 503)

    return app
