"""The order service's app factory: builds engine, barrier, producer and routes from settings."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

from fastapi import FastAPI
from sqlalchemy import Engine

from halfmq.client import AsyncConsumer, AsyncTransactionProducer
from halfmq.client.fastapi_checks import mount_check_endpoint, producer_lifespan
from halfmq.client.sqlalchemy.barrier import TransactionBarrier

from .. import host_names, http_problems, tracing
from ..credentials import secret_value
from ..database import create_db_engine, migrate, writer
from ..health import DatabaseProbe
from .config import OrderSettings
from .fast_path import PlaceOrderFastPath
from .order_service import OrderService
from .payments import PaymentDue, PaymentDueSender
from .repository import OrderRepository
from .routes import PROBLEM_STATUS, router

log = logging.getLogger(__name__)


def create_app(settings: OrderSettings | None = None) -> FastAPI:
    settings = settings or OrderSettings()
    engine = create_db_engine(settings.database_url, settings.db_pool_size)
    barrier = TransactionBarrier(writer(engine), write_batch_max=settings.write_batch_max, local_tx_timeout=settings.local_tx_timeout,
                                 commit_grace=settings.commit_grace, retention=settings.record_retention)
    producer = AsyncTransactionProducer(
        settings.broker_url, settings.producer_group, barrier,
        check_url=settings.check_url, heartbeat_interval=settings.heartbeat_interval,
        token=settings.broker_token_value(), verify=settings.broker_verify(),
    )
    check_secret = secret_value(settings.check_secret, settings.check_secret_file)
    if check_secret is None:
        log.warning("no ORDER_CHECK_SECRET: the check-back endpoint answers unsigned requests (fit only for a loopback broker without auth)")

    repo = OrderRepository(engine)
    payment_due = AsyncConsumer(settings.broker_url, settings.payment_due_group, settings.payment_due_topic, PaymentDue(repo).handle,
                                token=settings.broker_token_value(), verify=settings.broker_verify())
    app = FastAPI(title="halfmq order service", lifespan=_lifespan(settings, engine, producer_lifespan(producer, barrier), payment_due),
                  **tracing.app_options(settings.traces_idle))
    app.state.settings = settings
    app.state.orders = OrderService(repo, barrier, producer, settings.topic, settings.faults_enabled)
    app.state.orders.payment_due = PaymentDueSender(settings.payment_due_topic, settings.payment_due_seconds)
    app.state.database_probe = DatabaseProbe(engine, "order")
    http_problems.install(app, PROBLEM_STATUS)
    app.include_router(router)
    app.add_middleware(PlaceOrderFastPath, service=lambda: app.state.orders, statuses=PROBLEM_STATUS)
    mount_check_endpoint(app, producer, check_secret=check_secret)
    tracing.install(app, settings.traces_idle)  # every request's span, the fast path's too
    host_names.install(app, settings)  # the outermost layer: a Host none of the service's names reaches nothing
    return app


def _lifespan(settings: OrderSettings, engine: Engine, producing: Callable[[FastAPI], AbstractAsyncContextManager[None]],
              payment_due: AsyncConsumer) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await asyncio.to_thread(migrate, "order", engine)
        try:
            async with producing(app):
                consuming = asyncio.get_running_loop().create_task(payment_due.run(), name="order-payment-due")
                log.info("order service ready: db %s, broker %s, check-backs at %s; payments fall due after %.0f s (%s as %s)",
                         engine.url.render_as_string(hide_password=True), settings.broker_url, settings.check_url,
                         settings.payment_due_seconds, settings.payment_due_topic, settings.payment_due_group)
                try:
                    yield
                finally:
                    payment_due.stop()  # finishes the payments in hand and acks them; the rest come back later
                    await asyncio.gather(consuming, return_exceptions=True)
                    await payment_due.close()
        finally:
            engine.dispose()

    return lifespan
