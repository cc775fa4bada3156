"""Today's HTTP answers, pinned while the router is rebuilt (issue 31 item 4): the same bytes from the one route table.

``router_pins.json`` holds, per request of ``router_pin_requests.REQUESTS`` (sent in order to one in-process
broker), the status, content type, Allow, Location and body the broker answered before the rewrite, and
the set of operations in ``/openapi.json``. Bodies carrying message ids, clocks or metrics are compared
by status and headers only.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from halfmq.broker.config import BrokerSettings
from halfmq.broker.runtime import BrokerRuntime
from halfmq.broker.runtime.app import create_app

from .router_pin_requests import REQUESTS

PINS = json.loads((Path(__file__).parent / "router_pins.json").read_text())
UNSTABLE = ("msg_id", "# HELP")  # ids carry the host and pid; metrics carry counts


@pytest.fixture
async def answers(tmp_path: Path) -> AsyncIterator[tuple[list[list[Any]], Any]]:
    settings = BrokerSettings(data_dir=tmp_path, grpc_port=0)
    runtime = BrokerRuntime.open(settings)
    await runtime.start()
    try:
        app = create_app(settings, runtime)
        app.state.runtime = runtime  # what the lifespan does
        got = []
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as client:
            for method, url, kwargs in REQUESTS:
                r = await client.request(method, url, **kwargs)
                got.append([method, url, r.status_code, r.headers.get("content-type"), r.headers.get("allow"),
                            r.headers.get("location"), r.text])
        yield got, app
    finally:
        await runtime.stop()
        runtime.store.close()


async def test_every_pinned_request_gets_the_answer_it_got_before(answers: tuple[list[list[Any]], Any]) -> None:
    got, _ = answers
    for before, now in zip(PINS["answers"], got, strict=True):
        if any(mark in before[-1] for mark in UNSTABLE):
            before, now = before[:-1], now[:-1]
        assert now == before, f"{before[0]} {before[1]}"


async def test_the_openapi_document_lists_the_same_operations(answers: tuple[list[list[Any]], Any]) -> None:
    _, app = answers
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as client:
        paths = (await client.get("/openapi.json")).json()["paths"]
    assert sorted(f"{m.upper()} {p}" for p, ops in paths.items() for m in ops) == PINS["operations"]
