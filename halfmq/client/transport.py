"""The one place HTTP becomes broker semantics.

Callers of the SDK should only ever have to catch ``BrokerError``: a network
failure becomes ``BrokerUnavailable`` (retriable) with a one-line message and
the library's own exception on ``.cause``, a problem+json answer becomes the
error class its ``code`` names, and a body that does not match the protocol
becomes a plain ``BrokerError``. Retrying is not done here; it is a policy of
the callers (see ``retry``).

There is one transport, on aiohttp: the blocking clients run the async ones on
the SDK's loop thread (``loop_thread``). It imports aiohttp when it is first
built, never at import, so ``from halfmq import Producer`` costs no more than
the SDK's own modules (docs/decisions/020-sdk-footprint.md).
"""

from __future__ import annotations

import asyncio
import os
import socket
import ssl
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar
from urllib.parse import urlsplit

import msgspec

from halfmq.aiohttp_session import LoopSession
from halfmq.errors import BrokerError, BrokerUnavailable, Unauthenticated, error_class_for

from .broker_urls import BrokerUrls, split_urls
from .endpoints import Call, cluster_view
from .environment import CA_FILE_ENV, TOKEN_ENV, env_token, resolve_url
from .loop_thread import AsyncLifecycle
from .retry import async_retrying

if TYPE_CHECKING:
    import aiohttp

T = TypeVar("T")

__all__ = ["TIMEOUT", "AsyncClient", "AsyncTransport", "ClientOptions", "TransportOptions", "Verify", "error_from_answer", "failure_reason",
           "request_not_sent", "require_http_url"]

_PROBLEM_FIELDS = frozenset({"type", "title", "status", "detail", "code", "retriable"})
# A plain-text 502/503/504 usually comes from a proxy in front of a broker
# that is restarting, so it is as transient as a refused connection.
_TRANSIENT_STATUSES = frozenset({502, 503, 504})
_ACCEPT = {"accept": "application/json, application/problem+json"}
_SEND_JSON = {**_ACCEPT, "content-type": "application/json"}


# How long one attempt waits for its answer (Kafka's request.timeout.ms). Long enough for a broker's own
# FLUSH_*_TIMEOUT answer (sync_flush_timeout, 5 s) on a healthy node; a node that took no answer in that time is
# suspected as long. A set's hung leader is left sooner, once another node leads (``PROBE_AFTER``). How long a whole
# call may take is the retries' and the set's election's (``retry``, ``broker_urls.LEADER_WAIT``).
TIMEOUT = 5.0
# After this long without an answer from a set's node (the default timeout), a call asks the other nodes who leads, and
# again at this pace, one probe at a time per transport: once another node answers as the writable leader, the call
# gives up as it would at its timeout (its retry repeats a numbered send there, with its sequence number).
PROBE_AFTER = 0.5
Verify = bool | str  # True: the system's CAs; a path: this CA bundle; False: no verification (tests only)


class TransportOptions(TypedDict, total=False):
    """The keyword options every client takes (``AsyncClient``'s): how it reaches the broker, how often it retries."""

    timeout: float
    retries: int
    pool_size: int
    connections_per_client: int
    max_in_flight: int
    token: str | None
    verify: Verify | None


class ClientOptions(TransportOptions, total=False):
    """The keyword options both producers take (documented on ``AsyncProducer``): ``TransportOptions``, and
    whether they number their sends and batch concurrent ones."""

    idempotent: bool
    idempotent_id: str | None
    coalesce: bool


def require_http_url(url: str, what: str = "broker URL") -> str:
    """``url`` if it is http(s) with a host; else a ValueError naming the fix.

    Without this, ``localhost:10911`` parses as scheme ``localhost`` and fails at the
    first request with the HTTP library's generic complaint, far from the mistake.
    """
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        rest = url.split("://", 1)[-1] or "127.0.0.1:10911"
        raise ValueError(f"{what} {url!r} must start with http:// or https://, e.g. http://{rest}")
    return url


def _override(error: BrokerError, **attrs: Any) -> BrokerError:
    # ``status``/``retriable``/``code`` are class-level facts of each error
    # type; an answer from the wire can only refine them per instance.
    for name, value in attrs.items():
        setattr(error, name, value)
    return error


# What fixes an UNAUTHENTICATED answer, named in the SDK's error (the broker's words are about HTTP headers).
TOKEN_HINT = f"the SDK sends the token given as token=... to the client, else ${TOKEN_ENV}"


def error_from_answer(status: int, body: bytes, where: str) -> BrokerError:
    """The typed error a non-2xx answer stands for, carrying its HTTP status."""
    try:
        problem = msgspec.json.decode(body)
    except msgspec.DecodeError:
        problem = None
    if isinstance(problem, dict) and isinstance(problem.get("code"), str):
        cls = error_class_for(problem["code"])
        detail = problem.get("detail") or problem.get("title") or ""
        if cls is Unauthenticated:
            detail = f"{detail} ({TOKEN_HINT})"
        extra = {k: v for k, v in problem.items() if k not in _PROBLEM_FIELDS}
        error = cls(str(detail), **extra)
        if cls is BrokerError:
            # A code newer than this SDK: the server's own word on it is the
            # best information there is.
            _override(error, code=problem["code"], retriable=bool(problem.get("retriable", status in _TRANSIENT_STATUSES)))
        return _override(error, status=status)
    if isinstance(problem, dict) and "detail" in problem:
        text = str(problem["detail"])
    else:
        text = " ".join(body[:500].decode("utf-8", "replace").split())  # a proxy's HTML page, on one line
    error = BrokerError(f"HTTP {status} from {where}: {text}".rstrip(": "))
    return _override(error, status=status, retriable=status in _TRANSIENT_STATUSES)


def _causes(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    todo: list[Any] = [exc]
    while todo:
        item = todo.pop()
        if not isinstance(item, BaseException) or any(item is s for s in seen):
            continue
        seen.append(item)
        # Libraries keep the OS error in different places: ``__cause__``, ``os_error``
        # or ``certificate_error`` (aiohttp), ``reason`` or an argument. Not
        # ``__context__``: that may be whatever the caller was handling at the time.
        todo += [item.__cause__, getattr(item, "os_error", None), getattr(item, "certificate_error", None), getattr(item, "reason", None)]
        todo += [arg for arg in item.args if isinstance(arg, BaseException)]
    return seen


def failure_reason(exc: BaseException, timeout: float | None = None) -> str:
    """A few words a person can act on, for whatever a network library raised."""
    causes = _causes(exc)
    untrusted = [c for c in causes if isinstance(c, ssl.SSLCertVerificationError)]
    if untrusted:
        why = next((c.verify_message for c in untrusted if getattr(c, "verify_message", None)), untrusted[-1])
        return (f"certificate not trusted: {why}; "
                f"pass verify= the CA file, or set ${CA_FILE_ENV}")
    for kind, words in ((ConnectionRefusedError, "connection refused"), (socket.gaierror, "host name not found"),
                        (ConnectionResetError, "connection reset"), (ssl.SSLError, "TLS failed")):
        if any(isinstance(c, kind) for c in causes):
            return words
    names = " ".join(type(c).__name__.lower() for c in causes)
    if "timeout" in names or any(isinstance(c, TimeoutError) for c in causes):
        return "no answer in time" if timeout is None else f"no answer within {timeout:g}s"
    if "disconnect" in names or "protocolerror" in names:
        return "the connection closed before an answer"
    return f"{type(exc).__name__}: {exc}"


def _unavailable(base: str, call: Call[Any], exc: BaseException, *, sent: bool, timeout: float | None) -> BrokerUnavailable:
    reason = failure_reason(exc, timeout)
    message = f"no answer from the broker at {base} to {call.method} {call.path} ({reason})" if sent else f"cannot reach the broker at {base} ({reason})"
    return BrokerUnavailable(message, cause=exc, sent=sent)


def request_not_sent(exc: BaseException) -> bool:
    """True only when ``exc`` proves the request never reached the server.

    A read timeout, a reset connection or a 5xx can all come after the server
    acted on the request, so only a failure to connect counts. Requests that
    are not idempotent (a half send opens a new transaction each time) may be
    retried on this and nothing else.
    """
    return isinstance(exc, BrokerUnavailable) and exc.sent is False


def _answer(call: Call[T], status: int, content_type: str, body: bytes, where: str) -> T:
    """What a 2xx answer means for ``call``; the typed error anything else stands for."""
    if not 200 <= status < 300:
        raise error_from_answer(status, body, where)
    if not body:
        data: Any = None
    elif "json" not in (content_type or "application/json"):
        data = body.decode("utf-8", "replace")
    else:
        try:
            data = msgspec.json.decode(body)
        except msgspec.DecodeError as exc:
            raise BrokerError(f"{where}: response is not JSON: {exc}") from None
    return parsed(call, data)


def parsed(call: Call[T], data: Any) -> T:
    """``call``'s result from its decoded answer; an answer of the wrong shape is a protocol error."""
    try:
        return call.parse(data)
    except BrokerError:
        raise
    except ValueError as exc:
        raise BrokerError(f"{call.method} {call.path}: response does not match the protocol: {exc}") from None


class AsyncTransport:
    """Asyncio transport on aiohttp, bounded in flight.

    ``httpx.AsyncClient`` collapses past about 8 concurrent requests (DESIGN
    section 7, encode/httpx#3215); a pool of them still cost ~1.7 ms of CPU per
    request here. aiohttp keeps one connection pool of ``pool_size *
    connections_per_client`` keep-alive connections, and a semaphore bounds the
    requests in flight so extra callers queue here. Only a failure to connect
    counts as "not sent" (``request_not_sent``); a disconnect after sending does not.
    """

    def __init__(self, base_url: str | None, *, timeout: float = TIMEOUT, pool_size: int = 8, connections_per_client: int = 8,
                 max_in_flight: int = 64, token: str | None = None, verify: Verify | None = None,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        if pool_size < 1 or connections_per_client < 1 or max_in_flight < 1:
            raise ValueError("pool_size, connections_per_client and max_in_flight must be at least 1")
        import aiohttp

        self._aiohttp = aiohttp
        # One URL, or a broker set's comma-separated list (None: $HALFMQ_URL, else the local default, ``environment``);
        # a node that did not answer within ``timeout`` is suspected for as long.
        spec = resolve_url(base_url)
        self._urls = BrokerUrls([require_http_url(u) for u in split_urls(spec)] or [require_http_url(spec)], suspect_for=timeout)
        self._timeout = timeout
        self._probed_at = float("-inf")  # the last probe of who leads (``_led_elsewhere``)
        self._sleep = sleep  # the waits between a set's nodes and between probes (a test gives one it ends by hand)
        self.answered_by: str | None = None  # the node that answered the latest call (``call``)
        self._connections = min(pool_size * connections_per_client, max_in_flight)
        self._in_flight = asyncio.Semaphore(max_in_flight)
        self._session = LoopSession(self._new_session)
        token = token if token is not None else env_token()  # none: a broker with auth off
        self._headers = {"authorization": f"Bearer {token}"} if token else {}
        # Certificates are always verified unless ``verify=False``; a path (or $HALFMQ_CA_FILE) adds a private CA.
        verify = (os.environ.get(CA_FILE_ENV) or True) if verify is None else verify
        self._ssl = ssl.create_default_context(cafile=verify) if isinstance(verify, str) else verify

    def _client(self) -> aiohttp.ClientSession:
        return self._session.get()

    def _new_session(self) -> aiohttp.ClientSession:
        import aiohttp  # (loaded by __init__ already)

        # a connection per node beyond the calls' own, for the probes of who leads (``_led_elsewhere``)
        probes = len(self._urls.urls) if len(self._urls.urls) > 1 else 0  # (one broker is never probed)
        return aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=self._connections + probes, ttl_dns_cache=300, ssl=self._ssl),
                                     timeout=aiohttp.ClientTimeout(total=None), auto_decompress=False, headers=self._headers)

    @property
    def urls(self) -> list[str]:
        """The broker URLs this transport was given (a set's nodes, or one broker)."""
        return list(self._urls.urls)

    async def call(self, call: Call[T]) -> T:
        """``call`` on the node believed to lead; on another after a failure, as ``broker_urls.Route`` decides.

        ``answered_by`` is then the URL of the node whose answer (or refusal) this was: an operator's tool says which node spoke.
        """
        route = self._urls.route()
        attempt = route.first()
        while True:
            if attempt.wait:
                await self._sleep(attempt.wait)
            try:
                answer = await self._answer_or_leave(call, attempt.url)
            except BrokerError as exc:
                following = route.after(exc, attempt.url)
                if following is None:
                    if not isinstance(exc, BrokerUnavailable):  # a refusal is an answer too
                        self.answered_by = attempt.url
                    raise
                attempt = following
                continue
            self.answered_by = attempt.url
            return answer

    async def _answer_or_leave(self, call: Call[T], base: str) -> T:
        """``_call_once``, given up as unanswered if another node of the set answers as its leader while it waits."""
        if len(self._urls.urls) < 2 or call.timeout is not None:  # (a long poll waits by design)
            return await self._call_once(call, base)
        attempt = asyncio.ensure_future(self._call_once(call, base))
        try:
            while not await self._answered_within(attempt, PROBE_AFTER):
                if await self._led_elsewhere(base):
                    raise _unavailable(base, call, TimeoutError("another node leads"), sent=True, timeout=None)
            return attempt.result()
        finally:
            attempt.cancel()

    async def _answered_within(self, attempt: asyncio.Future[Any], seconds: float) -> bool:
        """Whether ``attempt`` ended within ``seconds``: back as soon as it ends, or once they have passed."""
        period = asyncio.ensure_future(self._sleep(seconds))
        try:
            await asyncio.wait((attempt, period), return_when=asyncio.FIRST_COMPLETED)
        finally:
            period.cancel()
        return attempt.done()

    async def _led_elsewhere(self, asked: str) -> bool:
        """Whether calls left ``asked`` for a node that answers as the writable leader (asked at most every PROBE_AFTER s)."""
        now = self._urls.clock()
        if now - self._probed_at >= PROBE_AFTER:
            self._probed_at = now
            others = [u for u in self._urls.urls if u != asked]
            views = await asyncio.gather(*(self._request(cluster_view(PROBE_AFTER), u) for u in others), return_exceptions=True)
            leaders = [u for u, v in zip(others, views, strict=True) if not isinstance(v, BaseException) and v.role == "leader" and v.writable]
            if leaders:
                self._urls.moved(asked, leaders[0])
        return self._urls.base != asked and asked in self._urls.suspects()

    async def _call_once(self, call: Call[T], base: str) -> T:
        async with self._in_flight:
            return await self._request(call, base)

    async def _request(self, call: Call[T], base: str) -> T:  # (a probe takes no place of the calls in flight)
        aiohttp = self._aiohttp
        content, headers = (None, _ACCEPT) if call.body is None else (msgspec.json.encode(call.body), _SEND_JSON)
        url = base + call.path
        params = {k: str(v) for k, v in call.params.items()} if call.params else None
        seconds = self._timeout if call.timeout is None else call.timeout
        timeout = aiohttp.ClientTimeout(total=seconds)
        try:
            async with self._client().request(call.method, url, data=content, headers=headers, params=params,
                                              timeout=timeout, allow_redirects=False) as resp:
                body = await resp.read()
                status, content_type = resp.status, resp.headers.get("content-type", "")
        except aiohttp.ClientConnectorError as exc:
            raise _unavailable(base, call, exc, sent=False, timeout=seconds) from None
        except (TimeoutError, aiohttp.ClientError) as exc:
            raise _unavailable(base, call, exc, sent=True, timeout=seconds) from None
        return _answer(call, status, content_type, body, f"{call.method} {url}")

    async def close(self) -> None:
        await self._session.aclose()


class AsyncClient(AsyncLifecycle):
    """Base of the asyncio clients: one ``AsyncTransport`` to the broker, the retry policy of its calls, ``close``."""

    def __init__(self, base_url: str | None, *, timeout: float = TIMEOUT, retries: int = 3, pool_size: int = 8, connections_per_client: int = 8,
                 max_in_flight: int = 64, token: str | None = None, verify: Verify | None = None) -> None:
        """``base_url`` None: $HALFMQ_URL, else http://127.0.0.1:10911 (``environment``); a broker set's URLs, comma-separated.

        ``timeout`` bounds one attempt (``TIMEOUT``); ``retries`` counts the attempts after one that failed retriably.
        Requests spread over ``pool_size`` * ``connections_per_client`` connections, at most ``max_in_flight`` at once.
        ``token``: the bearer token (else $HALFMQ_TOKEN); ``verify``: a CA file, or False (tests only).
        """
        async_retrying(retries)  # a bad value fails here, not at the first call
        self._timeout = timeout
        self._retries = retries
        self._transport = AsyncTransport(base_url, timeout=timeout, pool_size=pool_size, connections_per_client=connections_per_client,
                                         max_in_flight=max_in_flight, token=token, verify=verify)

    async def _call(self, call: Call[T]) -> T:
        """``call``, retried on the failures that say they are retriable."""
        result: T = await async_retrying(self._retries)(self._transport.call, call)
        return result

    async def close(self) -> None:
        """Close the connections (idempotent; a later call opens new ones)."""
        await self._transport.close()
