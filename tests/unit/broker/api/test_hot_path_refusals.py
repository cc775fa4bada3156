"""A refused hot-path request lets go of its body at once, not at the next full garbage collection.

The answer to a refused request (a 413, a 429 OPEN_TRANSACTIONS_FULL, a 409) used to keep the error in a local of
the frame its own traceback holds: a reference cycle that kept the request's body, decoded twice, alive until a
full collection; 60 refused 15 MB requests took a broker from 72 to 1,804 MiB (issue 30, item 9).
"""

from __future__ import annotations

import gc
import tracemalloc
from pathlib import Path

import orjson

from halfmq.broker.config import BrokerSettings
from halfmq.broker.runtime import BrokerRuntime
from halfmq.broker.runtime.app import create_app
from tests.support.asgi_messages import chunks

MiB = 1024 * 1024


async def post(app, path: str, body: bytes) -> int:
    scope = {"type": "http", "method": "POST", "path": path, "raw_path": path.encode(), "query_string": b"",
             "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]}
    sent: list[dict] = []

    async def send(message: dict) -> None:
        sent.append(message)

    await app(scope, chunks(body), send)
    return sent[0]["status"]


async def test_refused_sends_leave_nothing_of_their_bodies_for_the_cycle_collector(tmp_path: Path) -> None:
    settings = BrokerSettings(data_dir=tmp_path, grpc_port=0, max_message_size=1 * MiB)
    runtime = BrokerRuntime.open(settings)
    try:
        app = create_app(settings, runtime)
        app.state.runtime = runtime  # what the lifespan does
        body = orjson.dumps({"messages": [{"body": "x" * (2 * MiB)}]})  # over max_message_size: 413
        assert await post(app, "/v1/topics/T/messages", body) == 413  # warm up (imports, caches)
        gc.collect()
        gc.disable()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            for _ in range(5):
                assert await post(app, "/v1/topics/T/messages", body) == 413
            kept = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
            gc.enable()
        print(f"kept after 5 refused 2 MiB sends, the cycle collector off: {kept / MiB:.2f} MiB")
        assert kept < 1 * MiB
    finally:
        await runtime.stop()
        runtime.store.close()
