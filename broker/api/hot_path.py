"""A raw ASGI front for the hot endpoints: they skip FastAPI and Starlette entirely.

Sends, half messages, ends, receives and acks are most of the traffic. Profiled
under 64 requests in flight, Starlette's Request/Route/Response objects and
FastAPI's middleware took about half of the event loop's time per send; here a
route is a split path, the body is read straight from ``receive`` and the reply
is two ``send`` calls. Everything else (and every unmatched path) goes to the
FastAPI app unchanged.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Awaitable, Callable

import orjson
from starlette.types import Receive, Scope, Send

from broker.errors import BrokerError, MethodNotAllowed, Unauthenticated

from .problems import CHALLENGE, PROBLEM

log = logging.getLogger(__name__)
_JSON = b"application/json"
_PROBLEM = PROBLEM.encode()
_CHALLENGE = [(k.encode(), v.encode()) for k, v in CHALLENGE.items()]
DISCONNECT_PROBE_SECONDS = 0.005


class ClientGone(Exception):
    """The client hung up before its request body arrived; nothing was done and nobody is left to answer."""


class Reply:
    """A JSON answer, rendered once by the front."""

    __slots__ = ("content", "status")

    def __init__(self, content: Any, status: int = 200) -> None:
        self.content = content
        self.status = status


class HotRequest:
    """What a hot endpoint gets: path parameters, the runtime and the body, nothing parsed eagerly."""

    __slots__ = ("scope", "receive", "path_params", "runtime")

    def __init__(self, scope: Scope, receive: Receive, path_params: dict[str, str], runtime: Any) -> None:
        self.scope = scope
        self.receive = receive
        self.path_params = path_params
        self.runtime = runtime

    @property
    def content_type(self) -> str:
        for name, value in self.scope["headers"]:
            if name == b"content-type":
                return value.decode("latin-1")
        return ""

    async def body(self) -> bytes:
        chunks = []
        while True:
            message = await self.receive()
            if message["type"] == "http.disconnect":
                raise ClientGone()
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    async def is_disconnected(self) -> bool:
        """Whether the client has hung up, waiting at most a few ms for the server to say so.

        uvicorn answers at once; granian's ``receive`` is a Rust future that needs a
        moment, so Starlette's "poll once, never wait" check would always say no.
        """
        pending = asyncio.ensure_future(self.receive())
        done, _ = await asyncio.wait({pending}, timeout=DISCONNECT_PROBE_SECONDS)
        if not done:
            pending.cancel()
            return False
        return pending.result().get("type") == "http.disconnect"


Endpoint = Callable[[HotRequest], Awaitable[Reply]]


class HotRoute:
    """``/v1/topics/{topic}/messages`` as literal and parameter segments, matched without regexes."""

    def __init__(self, path: str, endpoint: Endpoint, methods: list[str]) -> None:
        self.path = path
        self.endpoint = endpoint
        self.methods = frozenset(methods)
        self.allow = ", ".join(sorted(methods)).encode()
        self.segments = [(s[1:-1], True) if s.startswith("{") else (s, False) for s in path.split("/")]

    def match(self, parts: list[str]) -> dict[str, str] | None:
        if len(parts) != len(self.segments):
            return None
        params = {}
        for part, (text, is_param) in zip(parts, self.segments):
            if is_param:
                if not part:
                    return None
                params[text] = part
            elif part != text:
                return None
        return params


async def _answer(send: Send, status: int, media_type: bytes, body: bytes,
                  headers: list[tuple[bytes, bytes]] | None = None) -> None:
    raw = [(b"content-type", media_type), (b"content-length", str(len(body)).encode())]
    if headers:
        raw.extend(headers)
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


def _problem(error: BrokerError, path: str) -> bytes:
    return orjson.dumps(error.to_problem(path))


class HotPathApp:
    def __init__(self, app: Any, routes: list[tuple[str, Endpoint, list[str]]]) -> None:
        self.app = app
        self.routes = [HotRoute(path, endpoint, methods) for path, endpoint, methods in routes]

    def __getattr__(self, name: str) -> Any:  # tests and tools reach app.state etc. through the front
        return getattr(self.app, name)

    def _app_serves(self, scope: Scope) -> bool:
        """Whether the FastAPI app has a route for this method and path (e.g. GET /v1/transactions)."""
        from starlette.routing import Match

        return any(route.matches(scope)[0] is Match.FULL for route in self.app.router.routes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        parts = path.split("/")
        for route in self.routes:
            params = route.match(parts)
            if params is None:
                continue
            if scope["method"] not in route.methods:
                if self._app_serves(scope):
                    break
                error = MethodNotAllowed(f"{scope['method']} is not allowed on {path}")
                await _answer(send, 405, _PROBLEM, _problem(error, path), [(b"allow", route.allow)])
                return
            await self._serve(route, params, scope, receive, send)
            return
        await self.app(scope, receive, send)

    async def _serve(self, route: HotRoute, params: dict[str, str], scope: Scope, receive: Receive, send: Send) -> None:
        path = scope["path"]
        try:
            reply = await route.endpoint(HotRequest(scope, receive, params, self.app.state.runtime))
            body = orjson.dumps(reply.content)
        except ClientGone:
            return
        except BrokerError as exc:
            if exc.status >= 500:
                log.warning("%s %s: %s", scope["method"], path, exc.detail)
            await _answer(send, exc.status, _PROBLEM, _problem(exc, path), _CHALLENGE if isinstance(exc, Unauthenticated) else None)
            return
        except Exception:
            log.exception("unhandled error on %s %s", scope["method"], path)
            await _answer(send, 500, _PROBLEM, _problem(BrokerError("internal error; see the broker log"), path))
            return
        await _answer(send, reply.status, _JSON, body)
