"""A broker app on one real runtime whose cluster node is a test's fake: the set's routes and gates without etcd."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx

from halfmq.broker.config import BrokerSettings
from halfmq.broker.runtime import BrokerRuntime
from halfmq.broker.runtime.app import create_app


@asynccontextmanager
async def app_with_fake_node(tmp_path: Path, make_node: Callable[[Any], Any],
                             **more: Any) -> AsyncIterator[tuple[httpx.AsyncClient, Any]]:
    """A client of the app, and the app; ``make_node(app.state)`` is the node the app's cluster routes and gate ask;
    ``more``: other settings (small segments)."""
    settings = BrokerSettings(data_dir=tmp_path, grpc_port=0, cluster="etcd://127.0.0.1:2379/t", node_id="n1",
                              cluster_members=["n1=http://127.0.0.1:8080"], **more)
    runtime = BrokerRuntime.open(settings)
    await runtime.start()
    try:
        app = create_app(settings, runtime)
        app.state.runtime = runtime
        app.state.cluster = make_node(app.state)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1:8080") as client:
            yield client, app
    finally:
        await runtime.stop()
        runtime.store.close()
