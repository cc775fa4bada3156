"""A tiny check-back endpoint for the `tx` mix: answers every check with "commit".

It stands in for a producer whose end request never arrived. It runs on its
own thread and event loop so it outlives the driver's per-run loops and is
not queued behind the driver's own requests.
"""

from __future__ import annotations

import asyncio
import threading
import time

from aiohttp import web

from .servers import HOST, free_port


class CheckBackServer:
    def __init__(self, state: str = "commit") -> None:
        self.state = state
        self.port = free_port()
        self.url = f"http://{HOST}:{self.port}/halfmq/check"
        self.calls = 0
        self.first_call_at: dict[str, float] = {}  # transaction id -> time.time() of its first check
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._runner: web.AppRunner | None = None
        self._thread = threading.Thread(target=self._serve, name="bench-checkback", daemon=True)

    async def _check(self, request: web.Request) -> web.Response:
        payload = await request.json()
        self.calls += 1
        self.first_call_at.setdefault(payload.get("transaction_id", ""), time.time())
        return web.json_response({"state": self.state})

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        app = web.Application()
        app.router.add_post("/halfmq/check", self._check)
        self._runner = web.AppRunner(app, access_log=None)
        self._loop.run_until_complete(self._runner.setup())
        self._loop.run_until_complete(web.TCPSite(self._runner, HOST, self.port).start())
        self._ready.set()
        self._loop.run_forever()
        self._loop.run_until_complete(self._runner.cleanup())
        self._loop.close()

    def start(self) -> CheckBackServer:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("check-back server did not start")
        return self

    def stop(self) -> None:
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)

    def __enter__(self) -> CheckBackServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
