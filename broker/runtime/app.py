"""The broker's ASGI app, built by the composition root: the HTTP front, the console, the gates, and a lifespan that
opens the runtime (and, in a broker set, the node that serves it while it leads)."""

from __future__ import annotations

import functools
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from starlette.datastructures import State

from halfmq.asgi_body import BodyReader
from halfmq.broker.api import problems
from halfmq.broker.api.front import Front
from halfmq.broker.api.openapi import document
from halfmq.broker.api.router import Router
from halfmq.broker.api.table import ROUTES, TITLE, VERSION
from halfmq.broker.config import BrokerSettings
from halfmq.broker.grpc_front.front import GrpcFront, LeaderFront
from halfmq.broker.kafka_front.front import KafkaFront
from halfmq.broker.serving.allowed_hosts import HostAllowList
from halfmq.broker.serving.host_gate import HostGate

from .fallback_app import FallbackApp
from .services import BrokerRuntime
from .set_roles import LeaderFronts, SetRoles

if TYPE_CHECKING:
    from fastapi import FastAPI

log = logging.getLogger(__name__)


class BrokerApp:
    """The broker's ASGI app: the outermost gate to call, and the parts tools and tests look at, each by its name.

    The gates (host, leader, the hot front) are plain ASGI callables that forward nothing else: what a caller reaches
    besides calling the app is named here (the FastAPI app, its ``state``, the route table, the OpenAPI document).
    FastAPI is built when first reached (``fallback_app``); ``state`` is there from the start."""

    def __init__(self, outermost: Any, fallback: FallbackApp, router: Router) -> None:
        self.outermost = outermost
        self.fallback = fallback
        self.router = router

    @property
    def fastapi(self) -> FastAPI:
        return self.fallback.app

    @property
    def state(self) -> Any:
        return self.fallback.state

    def openapi(self) -> dict[str, Any]:
        return self.fastapi.openapi()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.outermost(scope, receive, send)


def create_app(settings: BrokerSettings | None = None, runtime: BrokerRuntime | None = None) -> BrokerApp:
    """Build the app; the store is opened here (or in the lifespan), never at import."""
    settings = settings or BrokerSettings()

    @asynccontextmanager
    async def lifespan(app: FallbackApp) -> AsyncIterator[None]:
        rt = runtime or BrokerRuntime.open(settings)
        app.state.runtime = rt
        node: Any = None
        grpc_front: Any = None
        kafka_front = KafkaFront()  # Kafka's wire protocol (DESIGN section 19), when its port is set; in a set, every member's
        if settings.cluster:  # a broker set: the node starts the runtime once it leads (broker/cluster/node.py)
            from halfmq.broker.cluster.node import ClusterNode

            # the runtime of the node's role, swapped on app.state; the RocketMQ front on while it leads
            roles = SetRoles(settings, app.state, LeaderFronts(LeaderFront(settings.advertise_url, settings.grpc_port), kafka_front,
                                                               settings))
            node = app.state.cluster = ClusterNode(settings, roles)
            kafka_front.in_set(settings.node_id, node)  # every member serves Kafka
            rt.watch_auth()  # a follower answers reads: a revoked token stops working there too
            rt.follow_topic_floors()  # and hides what its topics' own limits hide, as the leader does
            grpc_front = roles  # its RocketMQ front, started while the node leads; stopped here first
            await node.start()
            await kafka_front.start(lambda: app.state.runtime)
        else:
            await rt.start()
            grpc_front = GrpcFront()  # the RocketMQ 5 front on the same runtime (DESIGN section 14); a set's node starts its own
            await grpc_front.start(lambda: rt)
            await kafka_front.start(lambda: rt)
        log.info("broker ready: data dir %s, commit log end %d", settings.data_dir, rt.store.commit_log.end_offset)
        try:
            yield
        finally:
            await kafka_front.stop()
            if grpc_front is not None:
                await grpc_front.stop()
            if node is not None:
                await node.stop()
            await app.state.runtime.stop()
            log.info("broker stopped cleanly")

    routes, websockets = ROUTES, {}
    if settings.cluster:  # a broker set's view and replication routes, in its table only, and its replication stream
        from halfmq.broker.api.routes import cluster as cluster_routes

        routes, websockets = [*ROUTES, *cluster_routes.ROUTES], cluster_routes.WEBSOCKETS

    def fallback(state: State) -> FastAPI:
        """FastAPI serves what is not in the table: the console, /openapi.json and /docs, 404s (built at its first request)."""
        from fastapi import FastAPI
        from fastapi.staticfiles import StaticFiles

        from halfmq.broker.console import pages as console  # the operators' web console (HTML, not in the OpenAPI document)

        app = FastAPI(title=TITLE, version=VERSION)
        app.state = state  # the lifespan's, set before FastAPI exists
        problems.install(app)
        app.include_router(console.router)
        app.mount("/console/static", StaticFiles(directory=console.STATIC_DIR), name="console-static")
        # /openapi.json and /docs serve the table's document (FastAPI's own has no /v1 route), built when first asked for.
        app.openapi = functools.cache(lambda: document(routes, TITLE, VERSION))  # type: ignore[method-assign]
        return app

    app = FallbackApp(fallback, lifespan)
    front = Front(app, Router(routes), BodyReader(settings.max_request_bytes, settings.request_body_timeout), websockets)
    served: Any = front
    if settings.cluster:
        from .leader_gate import LeaderGate

        served = LeaderGate(front, app.state, front.router)
    allowed = HostAllowList.for_server(settings.host, settings.allowed_hosts, settings.advertise_url)
    return BrokerApp(HostGate(served, allowed, "HALFMQ_BROKER_ALLOWED_HOSTS"), app, front.router)
