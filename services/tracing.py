"""The services' spans: one server span per HTTP request, and the credit handler's; installed only when tracing is on.

``OTEL_TRACES_EXPORTER=otlp|console`` (or ``HALFMQ_TRACES``, ``ServiceSettings.traces``) turns tracing on at
start-up (``halfmq order`` / ``halfmq credit`` call ``halfmq.tracing.start``); ``TraceRequests`` then spans each
request but the idle ones (health checks, scrapes) unless ``HALFMQ_TRACES_IDLE`` asks, and costs one question
per request while off. The messaging spans (half, local transaction, end, check, process)
are the SDK's (``halfmq.client.tracing``): the services only open the request's span they nest in.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, MutableMapping
from functools import partial
from typing import Any

from fastapi import FastAPI

import halfmq.tracing as core

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_OFF: contextlib.nullcontext[None] = contextlib.nullcontext()


def install(app: FastAPI, traces_idle: bool) -> None:
    """Trace the HTTP requests of ``app`` while this process traces (``TraceRequests`` asks ``tracer()`` per request,
    so OTEL_TRACES_EXPORTER, HALFMQ_TRACES or a provider of the program's own all turn it on): every request but the
    idle ones (``GET /healthz``, ``/metrics``) unless ``traces_idle`` (HALFMQ_TRACES_IDLE) asks for those too."""
    app.add_middleware(TraceRequests, traces_idle=traces_idle)


def app_options(traces_idle: bool) -> dict[str, Any]:
    """``FastAPI(**app_options(...))``: FastAPI's own request spans (0.165 and later) skip the idle paths unless asked."""
    return core.fastapi_telemetry(FastAPI, traces_idle)


def _route(scope: Scope, status: int) -> str:
    """The low-cardinality part of the span's name: the matched route's template, else the path unless unknown."""
    route = scope.get("route")
    if route is not None and hasattr(route, "path"):
        return str(route.path)
    return scope["path"] if status < 404 else ""


async def _naming(span: Any, scope: Scope, send: Send, message: Message) -> None:
    """Send ``message``; at the response's start, name a span the router never named (a request it did not see) after its path."""
    if message["type"] == "http.response.start" and "route" not in scope and int(message["status"]) < 404:
        span.update_name(f"{scope['method']} {scope['path']}")
        span.set_attribute("http.route", scope["path"])
    await send(message)


class TraceRequests:
    """ASGI middleware: the request's SERVER span, ``{method} {route}``, continuing a caller's ``traceparent``.

    FastAPI 0.165 and later open that span themselves (their native telemetry, on once a provider is set):
    then this only names the span of a request the router never saw (the order service's fast path answers
    ``POST /orders`` before routing) after its path. With an older FastAPI it opens the span.
    """

    def __init__(self, app: ASGIApp, traces_idle: bool = False) -> None:
        self.app = app
        self.traces_idle = traces_idle

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        found = core.tracer()
        if found is None or scope["type"] != "http" or (not self.traces_idle and core.idle_path(scope["path"])):
            await self.app(scope, receive, send)
            return
        from opentelemetry import trace

        status = 500

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        method = scope["method"]
        current = trace.get_current_span()
        if current.is_recording():  # the framework's own server span, which ends with the response: named as it starts
            await self.app(scope, receive, partial(_naming, current, scope, send))
            return
        headers = {key.decode("latin-1").lower(): value.decode("latin-1") for key, value in scope.get("headers", ())}
        with found.start_as_current_span(method, context=core.extract(headers), kind=trace.SpanKind.SERVER,
                                         attributes={"http.request.method": method, "url.path": scope["path"]}) as span:
            try:
                await self.app(scope, receive, sending)
            finally:
                route = _route(scope, status)
                span.update_name(f"{method} {route}".strip())
                span.set_attributes({"http.response.status_code": status, **({"http.route": route} if route else {})})
                if status >= 500:
                    span.set_status(trace.Status(trace.StatusCode.ERROR))


def crediting(order_id: str, user_id: str) -> contextlib.AbstractContextManager[Any]:
    """The credit handler's span (``credit order``), inside the SDK's ``process`` span; nothing while tracing is off."""
    found = core.tracer()
    if found is None:
        return _OFF
    return found.start_as_current_span("credit order", attributes={"order.id": order_id, "user.id": user_id})
