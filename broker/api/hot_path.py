"""A thin ASGI front for the hot endpoints: they skip FastAPI's middleware stack.

Sends, half messages, ends, receives and acks are most of the traffic; FastAPI's
per-request middleware and router cost about a quarter of the CPU of a send.
Everything else (and every unmatched path) goes to the FastAPI app unchanged.
"""

from __future__ import annotations

import logging
from typing import Any, Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Match, Route
from starlette.types import Receive, Scope, Send

from broker.errors import BrokerError, MethodNotAllowed

from .problems import PROBLEM
from .responses import JsonResponse

log = logging.getLogger(__name__)
Endpoint = Callable[[Request], Awaitable[Response]]


class HotPathApp:
    def __init__(self, app: Any, routes: list[tuple[str, Endpoint, list[str]]]) -> None:
        self.app = app
        self.routes = [Route(path, endpoint, methods=methods) for path, endpoint, methods in routes]
        self._endpoints = {id(r): endpoint for r, (_, endpoint, _) in zip(self.routes, routes)}

    def __getattr__(self, name: str) -> Any:  # tests and tools reach app.state etc. through the front
        return getattr(self.app, name)

    def _app_serves(self, scope: Scope) -> bool:
        """Whether the FastAPI app has a route for this method and path (e.g. GET /v1/transactions)."""
        return any(route.matches(scope)[0] is Match.FULL for route in self.app.router.routes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            for route in self.routes:
                match, child = route.matches(scope)
                if match is Match.PARTIAL and not self._app_serves(scope):  # a hot path asked with another method
                    error = MethodNotAllowed(f"{scope['method']} is not allowed on {scope['path']}")
                    response = JsonResponse(error.to_problem(scope["path"]), status_code=405, media_type=PROBLEM, headers={"Allow": "POST"})
                    await response(scope, receive, send)
                    return
                if match is Match.PARTIAL:
                    break
                if match is Match.FULL:
                    scope = {**scope, **child, "app": self.app}
                    request = Request(scope, receive)
                    try:
                        response = await self._endpoints[id(route)](request)
                    except BrokerError as exc:
                        response = JsonResponse(exc.to_problem(request.url.path), status_code=exc.status, media_type=PROBLEM)
                    except Exception:
                        log.exception("unhandled error on POST %s", scope["path"])
                        response = JsonResponse(BrokerError("internal error; see the broker log").to_problem(scope["path"]), status_code=500, media_type=PROBLEM)
                    await response(scope, receive, send)
                    return
        await self.app(scope, receive, send)
