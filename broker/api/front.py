"""The front door: every /v1 route served from the one table (router.py), raw ASGI, no FastAPI per request.

Profiled under 64 requests in flight, Starlette's Request/Route/Response
objects and FastAPI's middleware took about half of the event loop's time per
send; here a route is a split path, the body is read straight from ``receive``
and the reply is two ``send`` calls. ``Router.resolve`` decides the match and
the 405; a path the table does not know goes to the FastAPI app (the console,
``/openapi.json`` and ``/docs``, and the 404s), its body read here first under the same limits.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qsl

import msgspec
import orjson
from pydantic import BaseModel, ValidationError
from starlette.datastructures import URL
from starlette.responses import RedirectResponse
from starlette.types import Receive, Scope, Send

from halfmq.asgi_body import BodyReader, ClientGone, declared_length, too_large
from halfmq.broker.usecases import Served, UseCases
from halfmq.errors import (
    BrokerError,
    InvalidGroupName,
    InvalidRequest,
    InvalidTopicName,
    InvalidTransactionalId,
    MethodNotAllowed,
    RequestBodyTimeout,
    RequestTooLarge,
    Unauthenticated,
)
from halfmq.wire.base import NAME_RULE

from ..serving.cork import CORK
from .allowed_methods import allow_header
from .problems import PROBLEM, as_broker_error, log_server_error, problem_headers, validation_problem
from .router import Route, Router

log = logging.getLogger(__name__)
_PROBLEM = PROBLEM.encode()
_CLOSE = [(b"connection", b"close")]  # the rest of a refused body is not worth reading
_BODY_REFUSED = (RequestTooLarge, RequestBodyTimeout)
DISCONNECT_PROBE_SECONDS = 0.005
_encode = msgspec.json.Encoder().encode
_Struct = msgspec.Struct


WebSocketEndpoint = Callable[[Scope, Receive, Send, Any], Awaitable[None]]  # (scope, receive, send, the app's state)


def _dumps(content: Any) -> bytes:
    """A dict answer with orjson; a wire struct inside one (a view in a listing) as msgspec sees it."""
    return orjson.dumps(content, default=msgspec.to_builtins)


def _raw_headers(error: BrokerError) -> list[tuple[bytes, bytes]]:
    """A problem's headers (Retry-After, WWW-Authenticate) as ASGI wants them."""
    return [(k.encode(), v.encode()) for k, v in problem_headers(error).items()]


def _name_with_a_slash(router: Router, scope: Scope) -> BrokerError | None:
    """The name's own 400 when a route matches the path as sent (a name with an encoded ``/`` in it): a client that
    sent topic ``a/b`` learns the name is wrong, not that no such route exists."""
    raw = scope.get("raw_path") or b""
    found = router.resolve_raw(scope["method"], raw) if b"%2f" in raw.lower() else None
    if found is None:
        return None
    for param, refusal in _NAME_REFUSALS.items():
        name = found[1].get(param)
        if name is not None and "/" in name:
            return refusal(f"invalid {param.replace('_', ' ')} {name[:64]!r}: {NAME_RULE}")
    return None


_NAME_REFUSALS: dict[str, type[InvalidRequest]] = {"topic": InvalidTopicName, "group": InvalidGroupName,
                                                   "tid": InvalidTransactionalId}


class Reply:
    """An answer, rendered once by the front: a ``halfmq.wire`` struct with msgspec, a dict with orjson (the answers
    not yet spelled as structs, docs/history/router-plan.md), or ``bytes`` as they are; the route's media type.

    ``headers`` are extra ones, as ASGI wants them (a replication fetch's term, log end, history...).
    """

    __slots__ = ("content", "status", "media_type", "headers")

    def __init__(self, content: Any, status: int = 200, media_type: bytes | None = None,
                 headers: list[tuple[bytes, bytes]] | None = None) -> None:
        self.content = content
        self.status = status
        self.media_type = media_type
        self.headers = headers


class ApiRequest:
    """What an endpoint gets: path parameters, the principal, the checked parameters, the use cases; the body on demand.

    ``state`` is the app's (a broker set's node is ``state.cluster``); ``runtime`` is ``state.runtime``, read once (a
    set's node swaps it when its role changes), ``usecases`` its use cases: what an endpoint calls.
    """

    __slots__ = ("scope", "receive", "path_params", "state", "runtime", "usecases", "body_reader", "principal", "params")

    runtime: Served
    usecases: UseCases

    def __init__(self, scope: Scope, receive: Receive, path_params: dict[str, str], state: Any, body_reader: BodyReader) -> None:
        self.scope = scope
        self.receive = receive
        self.path_params = path_params
        self.state = state
        self.runtime = state.runtime
        self.usecases = self.runtime.usecases
        self.body_reader = body_reader
        self.principal: Any = None
        self.params: Any = None

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


def _check(route: Route, request: ApiRequest) -> None:
    """Who is asking (unless the route is public), then the path and query parameters: before any body is read."""
    if not route.public:
        request.principal = request.runtime.access.principal(request.scope)
    if route.params is not None:
        request.params = checked_params(route, route.params, request)


def checked_params(route: Route, model: type[BaseModel], request: ApiRequest) -> BaseModel:
    """The path and query parameters as ``model``; a 400 naming ``path.x`` or ``query.y`` when they do not fit."""
    query = dict(parse_qsl(request.scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True))
    try:
        return model.model_validate({**query, **request.path_params})
    except ValidationError as exc:
        in_path = set(route.path_params)
        errors = [{**e, "loc": ("path" if e["loc"] and e["loc"][0] in in_path else "query", *e["loc"])}
                  for e in exc.errors(include_url=False, include_input=False)]
        raise validation_problem(errors) from None


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


class Front:
    """Every /v1 route from the table, the rest handed to FastAPI; every body read by one ``BodyReader``.

    ``websockets``: the WebSocket endpoints by path (a broker set's replication stream), given the app's state.
    """

    def __init__(self, app: Any, router: Router, body_reader: BodyReader,
                 websockets: dict[str, WebSocketEndpoint] | None = None) -> None:
        self.app = app
        self.router = router
        self.body_reader = body_reader
        self.websockets = websockets or {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            if scope["type"] == "websocket" and (endpoint := self.websockets.get(scope["path"])) is not None:
                await endpoint(scope, receive, send, self.app.state)
                return
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        declared = declared_length(scope)
        if declared is not None and declared > self.body_reader.limit:
            await _answer(send, 413, _PROBLEM, _problem(too_large(self.body_reader.limit), path), _CLOSE)
            return
        found = self.router.resolve(scope["method"], path)
        if type(found) is tuple:  # not isinstance: a call less on every request
            await self._serve(found[0], found[1], scope, receive, send)
        elif isinstance(found, frozenset):
            error = MethodNotAllowed(f"{scope['method']} is not allowed on {path}")
            await _answer(send, 405, _PROBLEM, _problem(error, path), [(b"allow", allow_header(found).encode())])
        else:
            await self._not_in_table(scope, receive, send)

    async def _not_in_table(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Starlette's 307 when the path with its trailing slash toggled is a table route; else FastAPI's."""
        path = scope["path"]
        toggled = path[:-1] if path.endswith("/") else path + "/"
        if path != "/" and self.router.serves_path(toggled):
            await RedirectResponse(str(URL(scope={**scope, "path": toggled})))(scope, receive, send)
        elif (refusal := _name_with_a_slash(self.router, scope)) is not None:
            await _answer(send, refusal.status, _PROBLEM, _problem(refusal, path))
        else:
            await self._pass_on(scope, receive, send)

    async def _pass_on(self, scope: Scope, receive: Receive, send: Send) -> None:
        """FastAPI gets the body already read under the limits; later ``receive`` calls still see a hang-up.

        FastAPI serves no /v1 route (a /v1 path here is a 404), so no token is asked for first.
        """
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

    async def _serve(self, route: Route, path_params: dict[str, str], scope: Scope, receive: Receive, send: Send) -> None:
        path = scope["path"]
        scope["route"] = route  # as Starlette does: the guard asks it whether the call is a set's own (Route.peer)
        request = ApiRequest(scope, receive, path_params, self.app.state, self.body_reader)
        try:
            if route.plain:  # a token and a body, nothing else to check first (every hot route)
                request.principal = request.runtime.access.principal(scope)
            else:
                _check(route, request)
            reply = await route.endpoint(request)
            content = reply.content
            body = content if content.__class__ is bytes else _encode(content) if isinstance(content, _Struct) else _dumps(content)
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
                headers = _raw_headers(error) + (_CLOSE if isinstance(error, Unauthenticated) else [])
                await _answer(send, error.status, _PROBLEM, _problem(error, path), headers, scope)
            finally:  # the error's traceback holds this frame, which holds the error: a cycle that kept the request's
                del error  # body alive until the next full gc (`except ... as exc` unbinds only exc)
            return
        await _answer(send, reply.status, route.raw_media_type if reply.media_type is None else reply.media_type, body,
                      reply.headers, scope)
