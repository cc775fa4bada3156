"""The one place HTTP becomes broker semantics.

Callers of the SDK should only ever have to catch ``BrokerError``: a network
failure becomes ``BrokerUnavailable`` (retriable), a problem+json answer
becomes the error class its ``code`` names, and a body that does not match the
protocol becomes a plain ``BrokerError``. Retrying is not done here; it is a
policy of the callers (see ``retry``).
"""

from __future__ import annotations

import asyncio
import os
import ssl
from typing import Any, TypeVar
from urllib.parse import urlsplit

import aiohttp
import httpx
import orjson

from halfmq.broker.errors import BrokerError, BrokerUnavailable, error_class_for

from .endpoints import Call

T = TypeVar("T")

__all__ = ["AsyncTransport", "Transport", "Verify", "auth_headers", "error_from_exception", "error_from_response",
           "request_not_sent", "require_http_url", "tls_context"]

_PROBLEM_FIELDS = frozenset({"type", "title", "status", "detail", "code", "retriable"})
# Failures after which the broker may simply be back a moment later.
_UNAVAILABLE = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError, httpx.ProxyError)
# A plain-text 502/503/504 usually comes from a proxy in front of a broker
# that is restarting, so it is as transient as a refused connection.
_TRANSIENT_STATUSES = frozenset({502, 503, 504})
# Failures that happen before a single byte of the request leaves: no
# connection could be made, or none was free in the pool in time.
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout, aiohttp.ClientConnectorError)
_ACCEPT = {"accept": "application/json, application/problem+json"}
_SEND_JSON = {**_ACCEPT, "content-type": "application/json"}


TOKEN_ENV = "HALFMQ_TOKEN"
CA_FILE_ENV = "HALFMQ_CA_FILE"
Verify = bool | str  # True: the system's CAs; a path: this CA bundle; False: no verification (tests only)


def auth_headers(token: str | None) -> dict[str, str]:
    """The bearer header for ``token``, else for $HALFMQ_TOKEN, else none (a broker with auth off)."""
    token = token if token is not None else os.environ.get(TOKEN_ENV)
    return {"authorization": f"Bearer {token}"} if token else {}


def require_http_url(url: str, what: str = "broker URL") -> str:
    """``url`` if it is http(s) with a host; else a ValueError naming the fix.

    Without this, ``localhost:10911`` parses as scheme ``localhost`` and fails at the
    first request with httpx's generic ``UnsupportedProtocol``, far from the mistake.
    """
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        rest = url.split("://", 1)[-1] or "127.0.0.1:10911"
        raise ValueError(f"{what} {url!r} must start with http:// or https://, e.g. http://{rest}")
    return url


def tls_context(verify: Verify | None) -> ssl.SSLContext | bool:
    """Certificates are always verified unless ``verify=False``; a path (or $HALFMQ_CA_FILE) adds a private CA."""
    if verify is None:
        verify = os.environ.get(CA_FILE_ENV) or True
    if isinstance(verify, str):
        return ssl.create_default_context(cafile=verify)
    return verify


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

    def __init__(self, base_url: str, *, timeout: float = 10.0, limits: httpx.Limits | None = None,
                 token: str | None = None, verify: Verify | None = None) -> None:
        self._client = httpx.Client(
            base_url=require_http_url(base_url),
            timeout=timeout,
            limits=limits or httpx.Limits(max_connections=100, max_keepalive_connections=20),
            headers=auth_headers(token),
            verify=tls_context(verify),
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
    """Asyncio transport on aiohttp, bounded in flight.

    ``httpx.AsyncClient`` collapses past about 8 concurrent requests (DESIGN
    section 7, encode/httpx#3215); a pool of them still cost ~1.7 ms of CPU per
    request here. aiohttp keeps one connection pool of ``pool_size *
    connections_per_client`` keep-alive connections, and a semaphore bounds the
    requests in flight so extra callers queue here. Only a failure to connect
    counts as "not sent" (``request_not_sent``); a disconnect after sending does not.
    """

    def __init__(
        self,
        base_url: str,
        *,
        timeout: float = 10.0,
        pool_size: int = 8,
        connections_per_client: int = 8,
        max_in_flight: int = 64,
        token: str | None = None,
        verify: Verify | None = None,
    ) -> None:
        if pool_size < 1 or connections_per_client < 1 or max_in_flight < 1:
            raise ValueError("pool_size, connections_per_client and max_in_flight must be at least 1")
        self._base = require_http_url(base_url).rstrip("/")
        self._timeout = timeout
        self._connections = min(pool_size * connections_per_client, max_in_flight)
        self._in_flight = asyncio.Semaphore(max_in_flight)
        self._session: aiohttp.ClientSession | None = None
        self._headers = auth_headers(token)
        self._ssl = tls_context(verify)

    def _client(self) -> aiohttp.ClientSession:
        # Created on first use, inside the running loop (aiohttp binds a session to its loop).
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self._connections, ttl_dns_cache=300, ssl=self._ssl),
                timeout=aiohttp.ClientTimeout(total=None), auto_decompress=False, headers=self._headers,
            )
        return self._session

    async def call(self, call: Call[T]) -> T:
        content, headers = _encode(call.body)
        url = self._base + call.path
        params = {k: str(v) for k, v in call.params.items()} if call.params else None
        timeout = aiohttp.ClientTimeout(total=self._timeout if call.timeout is None else call.timeout)
        async with self._in_flight:
            try:
                async with self._client().request(call.method, url, data=content, headers=headers, params=params, timeout=timeout) as resp:
                    body = await resp.read()
                    status, content_type = resp.status, resp.headers.get("content-type", "")
            except aiohttp.ClientConnectorError as exc:
                raise BrokerUnavailable(f"{call.method} {url}: cannot connect: {exc}") from exc
            except (aiohttp.ClientError, asyncio.TimeoutError) as exc:
                raise BrokerUnavailable(f"{call.method} {url}: {type(exc).__name__}: {exc}") from exc
        if 200 <= status < 300 and "json" in content_type:
            try:
                return _parse(call, orjson.loads(body) if body else None)
            except orjson.JSONDecodeError as exc:
                raise BrokerError(f"{call.method} {url}: response is not JSON: {exc}") from exc
        response = httpx.Response(status, headers={"content-type": content_type}, content=body, request=httpx.Request(call.method, url))
        return _parse(call, _decode(response))

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
