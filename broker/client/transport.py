"""The one place HTTP becomes broker semantics.

Callers of the SDK should only ever have to catch ``BrokerError``: a network
failure becomes ``BrokerUnavailable`` (retriable), a problem+json answer
becomes the error class its ``code`` names, and a body that does not match the
protocol becomes a plain ``BrokerError``. Retrying is not done here; it is a
policy of the callers (see ``retry``).
"""

from __future__ import annotations

import asyncio
from typing import Any, TypeVar

import httpx
import orjson

from broker.errors import BrokerError, BrokerUnavailable, error_class_for

from .endpoints import Call

T = TypeVar("T")

__all__ = ["AsyncTransport", "Transport", "error_from_exception", "error_from_response", "request_not_sent"]

_PROBLEM_FIELDS = frozenset({"type", "title", "status", "detail", "code", "retriable"})
# Failures after which the broker may simply be back a moment later.
_UNAVAILABLE = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError, httpx.ProxyError)
# A plain-text 502/503/504 usually comes from a proxy in front of a broker
# that is restarting, so it is as transient as a refused connection.
_TRANSIENT_STATUSES = frozenset({502, 503, 504})
# Failures that happen before a single byte of the request leaves: no
# connection could be made, or none was free in the pool in time.
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
_ACCEPT = {"accept": "application/json, application/problem+json"}
_SEND_JSON = {**_ACCEPT, "content-type": "application/json"}


def _override(error: BrokerError, **attrs: Any) -> BrokerError:
    # ``status``/``retriable``/``code`` are class-level facts of each error
    # type; an answer from the wire can only refine them per instance.
    for name, value in attrs.items():
        setattr(error, name, value)
    return error


def error_from_response(response: httpx.Response) -> BrokerError:
    """The typed error a non-2xx answer stands for, carrying its HTTP status."""
    status = response.status_code
    where = f"{response.request.method} {response.request.url}"
    try:
        body = orjson.loads(response.content)
    except orjson.JSONDecodeError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("code"), str):
        cls = error_class_for(body["code"])
        detail = body.get("detail") or body.get("title") or ""
        extra = {k: v for k, v in body.items() if k not in _PROBLEM_FIELDS}
        error = cls(str(detail), **extra)
        if cls is BrokerError:
            # A code newer than this SDK: the server's own word on it is the
            # best information there is.
            _override(error, code=body["code"], retriable=bool(body.get("retriable", status in _TRANSIENT_STATUSES)))
        return _override(error, status=status)
    if isinstance(body, dict) and "detail" in body:
        text = str(body["detail"])
    else:
        text = response.text[:500]
    error = BrokerError(f"HTTP {status} from {where}: {text}".rstrip(": "))
    return _override(error, status=status, retriable=status in _TRANSIENT_STATUSES)


def error_from_exception(exc: httpx.RequestError) -> BrokerError:
    """The typed error an httpx failure stands for."""
    try:
        where = f"{exc.request.method} {exc.request.url}"
    except RuntimeError:  # no request attached
        where = "request"
    message = f"{where}: {type(exc).__name__}: {exc}"
    if isinstance(exc, _UNAVAILABLE):
        return BrokerUnavailable(message)
    # Bad URL scheme, local protocol misuse, redirects: retrying cannot help.
    return BrokerError(message)


def request_not_sent(exc: BaseException) -> bool:
    """True only when ``exc`` proves the request never reached the server.

    A read timeout, a reset connection or a 5xx can all come after the server
    acted on the request, so only a failure to connect counts. Requests that
    are not idempotent (a half send opens a new transaction each time) may be
    retried on this and nothing else.
    """
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, _NOT_SENT):
            return True
        cause = cause.__cause__
    return False


def _encode(body: Any) -> tuple[bytes | None, dict[str, str]]:
    if body is None:
        return None, _ACCEPT
    return orjson.dumps(body), _SEND_JSON


def _decode(response: httpx.Response) -> Any:
    if not response.is_success:
        raise error_from_response(response)
    if not response.content:
        return None
    if "json" not in response.headers.get("content-type", "application/json"):
        return response.text
    try:
        return orjson.loads(response.content)
    except orjson.JSONDecodeError as exc:
        raise BrokerError(f"{response.request.method} {response.request.url}: response is not JSON: {exc}") from exc


def _parse(call: Call[T], data: Any) -> T:
    try:
        return call.parse(data)
    except BrokerError:
        raise
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        raise BrokerError(f"{call.method} {call.path}: response does not match the protocol: {exc}") from exc


def _timeout(call: Call[Any]) -> Any:
    return httpx.USE_CLIENT_DEFAULT if call.timeout is None else call.timeout


class Transport:
    """Blocking transport over one ``httpx.Client``, safe to share between threads."""

    def __init__(self, base_url: str, *, timeout: float = 10.0, limits: httpx.Limits | None = None) -> None:
        self._client = httpx.Client(
            base_url=base_url,
            timeout=timeout,
            limits=limits or httpx.Limits(max_connections=100, max_keepalive_connections=20),
        )

    def call(self, call: Call[T]) -> T:
        content, headers = _encode(call.body)
        try:
            response = self._client.request(
                call.method, call.path, content=content, headers=headers, params=call.params, timeout=_timeout(call)
            )
        except httpx.RequestError as exc:
            raise error_from_exception(exc) from exc
        return _parse(call, _decode(response))

    def close(self) -> None:
        self._client.close()


class AsyncTransport:
    """Asyncio transport spreading requests over a pool of ``httpx.AsyncClient``.

    One AsyncClient collapses past about 8 concurrent requests (DESIGN section
    7, encode/httpx#3215), so each client keeps a few connections, requests go
    to the clients round-robin, and a semaphore bounds the total in flight so
    extra callers queue here instead of inside httpx's pool.
    """

    def __init__(
        self,
        base_url: str,
        *,
        timeout: float = 10.0,
        pool_size: int = 8,
        connections_per_client: int = 8,
        max_in_flight: int = 64,
    ) -> None:
        if pool_size < 1 or connections_per_client < 1 or max_in_flight < 1:
            raise ValueError("pool_size, connections_per_client and max_in_flight must be at least 1")
        limits = httpx.Limits(max_connections=connections_per_client, max_keepalive_connections=connections_per_client)
        self._clients = [httpx.AsyncClient(base_url=base_url, timeout=timeout, limits=limits) for _ in range(pool_size)]
        self._next = 0
        self._in_flight = asyncio.Semaphore(max_in_flight)

    def _pick(self) -> httpx.AsyncClient:
        client = self._clients[self._next]
        self._next = (self._next + 1) % len(self._clients)
        return client

    async def call(self, call: Call[T]) -> T:
        content, headers = _encode(call.body)
        async with self._in_flight:
            try:
                response = await self._pick().request(
                    call.method, call.path, content=content, headers=headers, params=call.params, timeout=_timeout(call)
                )
            except httpx.RequestError as exc:
                raise error_from_exception(exc) from exc
        return _parse(call, _decode(response))

    async def close(self) -> None:
        await asyncio.gather(*(client.aclose() for client in self._clients))
