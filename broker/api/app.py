"""The broker's FastAPI app factory: wires the runtime into thin routes."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import Depends, FastAPI, Request

from halfmq.broker.asgi_body import BodyReader
from halfmq.broker.config import BrokerSettings

from . import problems
from .hot_path import HotPathApp
from .routes import consumer_groups, operations, producer_ids, topics, transactional_ids, transactions
from .runtime import BrokerRuntime

log = logging.getLogger(__name__)


def _authenticated(request: Request) -> None:
    request.app.state.runtime.guard.principal(request.scope)


def create_app(settings: BrokerSettings | None = None, runtime: BrokerRuntime | None = None) -> HotPathApp:
    """Build the app; the store is opened here (or in the lifespan), never at import."""
    settings = settings or BrokerSettings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        rt = runtime or BrokerRuntime.open(settings)
        app.state.runtime = rt
        await rt.start()
        log.info("broker ready: data dir %s, commit log end %d", settings.data_dir, rt.store.commit_log.end_offset)
        try:
            yield
        finally:
            await rt.stop()
            log.info("broker stopped cleanly")

    app = FastAPI(title="halfmq broker", version="1", lifespan=lifespan)
    problems.install(app)
    # Who is asking, before any body is validated: a stranger gets 401, not a hint about the request's shape.
    authenticated = [Depends(_authenticated)]
    app.include_router(topics.router, dependencies=authenticated)
    app.include_router(consumer_groups.router, dependencies=authenticated)
    app.include_router(transactions.router, dependencies=authenticated)
    app.include_router(transactional_ids.router, dependencies=authenticated)
    app.include_router(producer_ids.router, dependencies=authenticated)
    app.include_router(operations.router)
    return HotPathApp(app, [r for module in (topics, consumer_groups, transactions, transactional_ids) for r in module.RAW_ROUTES],
                      BodyReader(settings.max_request_bytes, settings.request_body_timeout))
