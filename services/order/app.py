"""The order service's app factory: builds engine, producer and routes from settings."""

from __future__ import annotations

import asyncio
import logging
from contextlib import asynccontextmanager
from typing import AsyncIterator

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from sqlalchemy import text

from halfmq.client import AsyncTransactionProducer, BrokerError

from .. import http_problems
from ..credentials import secret_value
from ..database import create_db_engine, is_migrated, migrate
from .config import OrderSettings
from .local_transaction import OrderTransactionListener
from .order_service import OrderService
from .repository import OrderRepository
from .routes import router

log = logging.getLogger(__name__)


def create_app(settings: OrderSettings | None = None) -> FastAPI:
    settings = settings or OrderSettings()
    engine = create_db_engine(settings.database_url, settings.db_pool_size)
    repo = OrderRepository(engine)
    producer = AsyncTransactionProducer(
        settings.broker_url, settings.producer_group, OrderTransactionListener(repo, settings.local_tx_timeout, settings.write_batch_max),
        check_url=settings.check_url, heartbeat_interval=settings.heartbeat_interval,
        token=secret_value(settings.broker_token, settings.broker_token_file),
        verify=str(settings.broker_ca_file) if settings.broker_ca_file else None,
    )
    check_secret = secret_value(settings.check_secret, settings.check_secret_file)
    if check_secret is None:
        log.warning("no ORDER_CHECK_SECRET: the check-back endpoint answers unsigned requests (fit only for a loopback broker without auth)")

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await asyncio.to_thread(migrate, "order", engine)
        try:
            await producer.start()
        except BrokerError as exc:  # keep serving reads; heartbeats go on in the background
            log.warning("broker not reachable at start (%s); will keep trying", exc)
        log.info("order service ready: db %s, broker %s, check-backs at %s", engine.url.render_as_string(hide_password=True), settings.broker_url, settings.check_url)
        try:
            yield
        finally:
            await producer.close()
            engine.dispose()

    app = FastAPI(title="halfmq order service", lifespan=lifespan)
    app.state.settings = settings
    app.state.orders = OrderService(repo, producer, settings.topic, settings.faults_enabled)
    http_problems.install(app)
    app.include_router(router)
    app.add_route("/halfmq/check", producer.check_app(check_secret=check_secret), methods=["POST"])

    @app.get("/healthz")
    async def healthz(request: Request) -> JSONResponse:
        def probe() -> bool:
            with engine.connect() as conn:
                conn.execute(text("SELECT 1"))
            return is_migrated("order", engine)

        try:
            migrated = await asyncio.to_thread(probe)
        except Exception as exc:  # the DB is down: unhealthy, not a 500 page
            return JSONResponse({"status": "unhealthy", "database": f"unreachable: {type(exc).__name__}"}, status_code=503)
        status = 200 if migrated else 503
        return JSONResponse({"status": "ok" if migrated else "unhealthy", "database": "ok", "migrated": migrated}, status_code=status)

    return app
