"""The credit service's app factory: the ORDER_TOPIC consumer plus a small read API."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import timedelta

from fastapi import FastAPI
from sqlalchemy import Engine

from halfmq.client import AsyncConsumer
from halfmq.client.sqlalchemy.inbox import Inbox

from .. import host_names, http_problems, tracing
from ..database import create_db_engine, migrate
from ..health import DatabaseProbe
from .config import CreditSettings
from .credit_service import CreditService
from .repository import CreditRepository
from .routes import PROBLEM_STATUS, router

log = logging.getLogger(__name__)


def create_app(settings: CreditSettings | None = None) -> FastAPI:
    settings = settings or CreditSettings()
    engine = create_db_engine(settings.database_url, settings.db_pool_size)
    repo = CreditRepository(engine, settings.consumer_group, timedelta(days=settings.inbox_retention_days))
    service = CreditService(repo, settings.points_per_unit,
                            settings.crash_after_commit_order if settings.faults_enabled else None,
                            settings.write_batch_max)
    consumer = AsyncConsumer(
        settings.broker_url, settings.consumer_group, settings.topic, service.handle,
        max_messages=settings.max_messages, invisible_seconds=settings.invisible_seconds,
        wait_seconds=settings.wait_seconds, concurrency=settings.consumer_concurrency,
        token=settings.broker_token_value(), verify=settings.broker_verify(),
    )
    app = FastAPI(title="halfmq credit service", lifespan=_lifespan(settings, engine, consumer, repo.inbox),
                  **tracing.app_options(settings.traces_idle))
    app.state.credits = service
    app.state.database_probe = DatabaseProbe(engine, "credit")
    http_problems.install(app, PROBLEM_STATUS)
    app.include_router(router)
    tracing.install(app, settings.traces_idle)
    host_names.install(app, settings)  # the outermost layer: a Host none of the service's names reaches nothing
    return app


def _lifespan(settings: CreditSettings, engine: Engine, consumer: AsyncConsumer,
              inbox: Inbox) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await asyncio.to_thread(migrate, "credit", engine)
        task = asyncio.get_running_loop().create_task(consumer.run())
        purging = asyncio.get_running_loop().create_task(inbox.purge_every(settings.inbox_purge_interval))
        app.state.consumer_task = task
        log.info("credit service consuming %s as %s from %s", settings.topic, settings.consumer_group, settings.broker_url)
        try:
            yield
        finally:
            purging.cancel()
            consumer.stop()  # finishes in-flight credits and acks them; the rest become visible again
            await asyncio.gather(task, purging, return_exceptions=True)
            await consumer.close()
            engine.dispose()

    return lifespan
