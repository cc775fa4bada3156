"""FastAPI, built at the first request that needs it: the console, /openapi.json and /docs, and the 404s.

Every route of the table (/v1, /healthz, /metrics) is the Front's and never reaches FastAPI. Importing FastAPI and
building its routes (the console's, pydantic's schemas of FastAPI's OpenAPI models, the templates) was most of what
a broker did before its first /healthz; a restart in about a second (issue 44) cannot pay it, nor can the tests that
start hundreds of brokers. The lifespan and ``state`` are this wrapper's own, so they run and exist before FastAPI
does; what FastAPI answers, once built, is what it answered when it was built at the start.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

from starlette.datastructures import State
from starlette.types import Receive, Scope, Send

Lifespan = Callable[[Any], AbstractAsyncContextManager[None]]


class FallbackApp:
    """An ASGI app that runs ``lifespan`` itself and hands every other request to the app ``build(state)`` makes once."""

    def __init__(self, build: Callable[[State], Any], lifespan: Lifespan) -> None:
        self.state = State()
        self._build = build
        self._lifespan = lifespan
        self._app: Any = None

    @property
    def app(self) -> Any:
        """The app ``build`` made, made now if no request has needed it yet."""
        if self._app is None:
            self._app = self._build(self.state)
        return self._app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._run_lifespan(receive, send)
        else:
            await self.app(scope, receive, send)

    async def _run_lifespan(self, receive: Receive, send: Send) -> None:
        """The ASGI lifespan protocol as Starlette's router runs it: a failure says which phase, with its traceback."""
        started = False
        await receive()  # lifespan.startup
        try:
            async with self._lifespan(self):
                await send({"type": "lifespan.startup.complete"})
                started = True
                await receive()  # lifespan.shutdown
        except BaseException:
            await send({"type": f"lifespan.{'shutdown' if started else 'startup'}.failed", "message": traceback.format_exc()})
            raise
        await send({"type": "lifespan.shutdown.complete"})
