"""The services' request spans: one per request while tracing is on, none for a health check or a scrape unless asked;
a request the router never saw is named after its path."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.testclient import TestClient
from opentelemetry.trace import SpanKind

from halfmq.services import tracing
from halfmq.services.settings_base import ServiceSettings
from tests.support import spans
from tests.support.spans import Recorded

recorded_spans = spans.recorded_spans  # the fixture


class FastPath:
    """Answers POST /fast before routing, as the order service's fast path answers POST /orders."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == "/fast":
            await send({"type": "http.response.start", "status": 201, "headers": []})
            await send({"type": "http.response.body", "body": b"{}"})
            return
        await self.app(scope, receive, send)


def app_with(traces_idle: bool = False) -> FastAPI:
    app = FastAPI(**tracing.app_options(traces_idle))

    @app.get("/items/{item_id}")
    def item(item_id: str) -> dict[str, str]:
        return {"id": item_id}

    @app.get("/healthz")
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    app.add_middleware(FastPath)
    tracing.install(app, traces_idle)
    return app


def test_tracing_is_read_from_halfmq_traces_and_off_by_default(monkeypatch) -> None:
    assert ServiceSettings().traces == ""
    monkeypatch.setenv("HALFMQ_TRACES", "console")
    assert ServiceSettings().traces == "console"


def test_the_idle_requests_are_traced_only_when_halfmq_traces_idle_asks(monkeypatch) -> None:
    assert ServiceSettings().traces_idle is False
    monkeypatch.setenv("HALFMQ_TRACES_IDLE", "true")
    assert ServiceSettings().traces_idle is True


def test_a_health_check_makes_no_span_while_a_real_request_does(recorded_spans: Recorded) -> None:
    with TestClient(app_with()) as client:
        assert client.get("/healthz").status_code == 200
        assert client.get("/items/7").status_code == 200
    assert [s.name for s in recorded_spans.spans if s.kind is SpanKind.SERVER] == ["GET /items/{item_id}"]


def test_asked_for_a_health_check_has_its_span_too(recorded_spans: Recorded) -> None:
    with TestClient(app_with(traces_idle=True)) as client:
        assert client.get("/healthz").status_code == 200
    assert [s.name for s in recorded_spans.spans if s.kind is SpanKind.SERVER] == ["GET /healthz"]


def test_on_every_request_has_one_server_span_named_by_its_route_or_its_path(recorded_spans: Recorded) -> None:
    with TestClient(app_with()) as client:
        assert client.post("/fast").status_code == 201
        assert client.get("/items/7").status_code == 200
        client.get("/items/7", headers={"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"})
    servers = [s for s in recorded_spans.spans if s.kind is SpanKind.SERVER]
    assert [s.name for s in servers] == ["POST /fast", "GET /items/{item_id}", "GET /items/{item_id}"]
    assert servers[0].attributes["http.route"] == "/fast"
    assert servers[2].parent is not None and servers[2].parent.span_id == 0xB7AD6B7169203331
