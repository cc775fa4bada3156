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
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from starlette.types import Receive, Scope, Send

from halfmq.asgi_body import BodyReader, ClientGone, declared_length, too_large
from halfmq.errors import BrokerError, MethodNotAllowed, RequestBodyTimeout, RequestTooLarge, Unauthenticated

from ..serving.cork import CORK
from .allowed_methods import allow_header, allowed_methods, serves
from .problems import PROBLEM, as_broker_error, log_server_error, problem_headers

log = logging.getLogger(__name__)
_JSON = b"application/json"
_PROBLEM = PROBLEM.encode()
_CLOSE = [(b"connection", b"close")]  # the rest of a refused body is not worth reading
_BODY_REFUSED = (RequestTooLarge, RequestBodyTimeout)
DISCONNECT_PROBE_SECONDS = 0.005


def _raw_headers(error: BrokerError) -> list[tuple[bytes, bytes]]:
    """A problem's headers (Retry-After, WWW-Authenticate) as ASGI wants them."""
    return [(k.encode(), v.encode()) for k, v in problem_headers(error).items()]


class Reply:
    """A JSON answer, rendered once by the front."""

    __slots__ = ("content", "status")

    def __init__(self, content: Any, status: int = 200) -> None:
        self.content = content
        self.status = status


class HotRequest:
    """What a hot endpoint gets: path parameters, the runtime and the body, nothing parsed eagerly."""

    __slots__ = ("scope", "receive", "path_params", "runtime", "body_reader")

    def __init__(self, scope: Scope, receive: Receive, path_params: dict[str, str], runtime: Any, body_reader: BodyReader) -> None:
        self.scope = scope
        self.receive = receive
        self.path_params = path_params
        self.runtime = runtime
        self.body_reader = body_reader

    @property
    def content_type(self) -> str:
        for name, value in self.scope["headers"]:
            if name == b"content-type":
                return value.decode("latin-1")
        return ""

    async def body(self) -> bytes:
        return await self.body_reader.read(self.receive)

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
        self.segments = [(s[1:-1], True) if s.startswith("{") else (s, False) for s in path.split("/")]

    def match(self, parts: list[str]) -> dict[str, str] | None:
        if len(parts) != len(self.segments):
            return None
        params = {}
        for part, (text, is_param) in zip(parts, self.segments, strict=True):
            if is_param:
                if not part:
                    return None
                params[text] = part
            elif part != text:
                return None
        return params


async def _answer(send: Send, status: int, media_type: bytes, body: bytes,
                  headers: list[tuple[bytes, bytes]] | None = None, scope: Scope | None = None) -> None:
    """Head and body; through a server that offers a cork (broker/serving/uvicorn_head_limits.py), in one write."""
    raw = [(b"content-type", media_type), (b"content-length", str(len(body)).encode())]
    if headers:
        raw.extend(headers)
    cork = (scope.get("extensions") or {}).get(CORK) if scope is not None else None
    if cork is None:
        await send({"type": "http.response.start", "status": status, "headers": raw})
        await send({"type": "http.response.body", "body": body})
        return
    cork.cork()
    try:
        await send({"type": "http.response.start", "status": status, "headers": raw})
        await send({"type": "http.response.body", "body": body})
    finally:
        cork.uncork()


def _problem(error: BrokerError, path: str) -> bytes:
    return orjson.dumps(error.to_problem(path))


class HotPathApp:
    """The front door: hot routes served here, the rest handed to FastAPI; every body read by one ``BodyReader``.

    FastAPI's routes get their body read here (capped, with a deadline) and
    replayed, so the limits and their problems are the same for all routes.
    """

    def __init__(self, app: Any, routes: list[tuple[str, Endpoint, list[str]]], body_reader: BodyReader) -> None:
        self.app = app
        self.routes = [HotRoute(path, endpoint, methods) for path, endpoint, methods in routes]
        self.body_reader = body_reader

    def __getattr__(self, name: str) -> Any:  # tests and tools reach app.state etc. through the front
        return getattr(self.app, name)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        declared = declared_length(scope)
        if declared is not None and declared > self.body_reader.limit:
            await _answer(send, 413, _PROBLEM, _problem(too_large(self.body_reader.limit), path), _CLOSE)
            return
        parts = path.split("/")
        for route in self.routes:
            params = route.match(parts)
            if params is None:
                continue
            if scope["method"] not in route.methods:
                if serves(self.app.router.routes, scope):  # e.g. GET /v1/transactions
                    break
                error = MethodNotAllowed(f"{scope['method']} is not allowed on {path}")
                allow = allow_header(route.methods | allowed_methods(self.app.router.routes, scope)).encode()
                await _answer(send, 405, _PROBLEM, _problem(error, path), [(b"allow", allow)])
                return
            await self._serve(route, params, scope, receive, send)
            return
        await self._pass_on(scope, receive, send)

    async def _pass_on(self, scope: Scope, receive: Receive, send: Send) -> None:
        """FastAPI gets the body already read under the limits; later ``receive`` calls still see a hang-up.

        A stranger is refused before the body is read, so no token means no 32 MiB read either.
        """
        if scope["path"].startswith("/v1/"):
            try:
                self.app.state.runtime.guard.principal(scope)
            except Unauthenticated as exc:
                await _answer(send, exc.status, _PROBLEM, _problem(exc, scope["path"]),
                              _raw_headers(exc) + _CLOSE)
                return
        try:
            body = await self.body_reader.read(receive)
        except ClientGone:
            return
        except _BODY_REFUSED as exc:
            await _answer(send, exc.status, _PROBLEM, _problem(exc, scope["path"]), _CLOSE)
            return
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)

    async def _serve(self, route: HotRoute, params: dict[str, str], scope: Scope, receive: Receive, send: Send) -> None:
        path = scope["path"]
        try:
            reply = await route.endpoint(HotRequest(scope, receive, params, self.app.state.runtime, self.body_reader))
            body = orjson.dumps(reply.content)
        except ClientGone:
            return
        except _BODY_REFUSED as exc:
            await _answer(send, exc.status, _PROBLEM, _problem(exc, path), _CLOSE)
            return
        except Exception as exc:
            error = as_broker_error(exc)
            if error is None:
                log.exception("unhandled error on %s %s", scope["method"], path)
                error = BrokerError("internal error; see the broker log")
            else:
                log_server_error(scope["method"], path, error)
            try:
                await _answer(send, error.status, _PROBLEM, _problem(error, path), _raw_headers(error), scope)
            finally:  # the error's traceback holds this frame, which holds the error: a cycle that kept the request's
                del error  # body alive until the next full gc (`except ... as exc` unbinds only exc)
            return
        await _answer(send, reply.status, _JSON, body, scope=scope)
