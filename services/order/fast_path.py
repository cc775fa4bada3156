"""POST /orders without the framework's per-request machinery, for the requests that need none of it.

Why: py-spy of the order service at ~1,000 orders/s showed about a third of its event loop in
FastAPI and Starlette's layers around the endpoint (exception middleware, exit stacks, routing,
dependency solving, response building): more than the endpoint's own work. This ASGI middleware
answers the common request (a JSON body that validates, no X-Fault, at most one Idempotency-Key
of a valid length) by calling ``OrderService.place`` directly. Anything else (an invalid body or
header, another content type, X-Fault, a large body) is handed on, body and all, to the FastAPI
route, which answers it exactly as before; so the OpenAPI document and every 4xx problem are the
route's own. A domain error of ``place`` becomes the same problem+json the app's handler would
give (``http_problems.service_problem``); any other exception propagates to the app's 500 handler.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import orjson
from pydantic import ValidationError
from starlette.requests import Request

from ..errors import ServiceError
from ..http_problems import ProblemStatus, service_problem
from .order_service import OrderService
from .routes import placed_view
from .schemas import OrderCreate

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

# Larger bodies are not an order: the route answers them (and any limit of the app's applies there).
MAX_FAST_BODY = 16 * 1024
_JSON = b"application/json"
_KEY_HEADER = b"idempotency-key"
_FAULT_HEADER = b"x-fault"
_CONTENT_TYPE = b"content-type"


class PlaceOrderFastPath:
    """ASGI middleware: the plain ``POST /orders`` straight to ``OrderService.place``; every other request to ``app``."""

    def __init__(self, app: ASGIApp, service: Callable[[], OrderService], statuses: ProblemStatus) -> None:
        self.app = app
        self.service = service
        self.statuses = statuses

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != "/orders":
            await self.app(scope, receive, send)
            return
        key = _plain_headers(scope["headers"])
        if key is False:
            await self.app(scope, receive, send)
            return
        body, more = await _read_body(receive)
        order = None if more else _valid_order(body)
        if order is None:
            await self.app(scope, _replay(body, more, receive), send)
            return
        await self._place(scope, send, order, key)

    async def _place(self, scope: Scope, send: Send, order: OrderCreate, key: str | None) -> None:
        service = self.service()
        try:
            placed = await service.place(order, key, None)
        except ServiceError as exc:
            problem = service_problem(Request(scope), exc, self.statuses)
            await problem(scope, _no_receive, send)
            return
        content = orjson.dumps(placed_view(placed))
        headers = [(b"content-length", str(len(content)).encode()), (b"content-type", _JSON)]
        if placed.replayed:
            headers.append((b"idempotent-replayed", b"true"))
        await send({"type": "http.response.start", "status": 200 if placed.replayed else 201, "headers": headers})
        await send({"type": "http.response.body", "body": content})


def _plain_headers(headers: list[tuple[bytes, bytes]]) -> str | None | bool:
    """The Idempotency-Key (None if absent) when the headers are ones the fast path answers as the route would; else False."""
    key: str | None = None
    json = False
    for name, value in headers:
        if name == _KEY_HEADER:
            if key is not None or not 1 <= len(value) <= 255:
                return False
            try:
                key = value.decode("latin-1")
            except UnicodeDecodeError:  # pragma: no cover - latin-1 decodes every byte
                return False
        elif name == _FAULT_HEADER:
            return False
        elif name == _CONTENT_TYPE:
            if json or value.split(b";", 1)[0].strip().lower() != _JSON:
                return False
            json = True
    return key if json else False


async def _read_body(receive: Receive) -> tuple[bytes, bool]:
    """The request body, and whether more of it is still unread (a body over ``MAX_FAST_BODY``)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":  # a disconnect: the route sees it too
            return b"".join(chunks), True
        chunk = message.get("body", b"")
        chunks.append(chunk)
        size += len(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks), False
        if size > MAX_FAST_BODY:
            return b"".join(chunks), True


def _valid_order(body: bytes) -> OrderCreate | None:
    """The order if the body is one the route would accept; None for the route to answer (and refuse)."""
    try:
        return OrderCreate.model_validate(orjson.loads(body))
    except (orjson.JSONDecodeError, ValidationError, TypeError, ValueError):
        return None


def _replay(body: bytes, more: bool, receive: Receive) -> Receive:
    """A ``receive`` giving the route what the fast path already read, then the rest of the request."""
    replayed = False

    async def replay() -> Message:
        nonlocal replayed
        if not replayed:
            replayed = True
            return {"type": "http.request", "body": body, "more_body": more}
        return await receive()

    return replay


async def _no_receive() -> Message:  # pragma: no cover - a response never reads the request
    return {"type": "http.disconnect"}
