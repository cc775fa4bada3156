"""The one way a node calls another node: only configured members, only they get the cluster token, over aiohttp.

The follower's replication stream, its term-end question, the position asks of an
election and the dead-leader probe all go through ``PeerClient``; a URL outside
the members is refused before a byte leaves, so the token (admin on
``cluster:broker``) cannot be handed to whatever a leader key in etcd names
(issue 30). Redirects are never followed. The SDK keeps the same rule for its
own token (halfmq.client.broker_urls).

The calls run on one ``aiohttp.ClientSession`` per node, the SDK's transport:
kept-alive connections, no cookie jar, answers as they are (never decoded). It
costs about 0.65x the CPU per call of the hand-written transport it replaced
(decision 047). aiohttp's errors become the few below, so the cluster's code
speaks no HTTP library's types: a refused connect (nobody listens: the process
is gone) is a ``PeerUnreachable`` with ``refused`` set. Every call a node makes
is safe to repeat (reads, and reports of a durable end that only rise), so a
kept-alive connection the peer closed while it sat idle is replaced once.
Members' https URLs are verified against ``HALFMQ_BROKER_PEER_CA_FILE`` (else the
system's CAs), host name included; a certificate not trusted is ``PeerNotTrusted``,
a setting to fix rather than a peer that is down, and nothing is sent over less.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from halfmq.aiohttp_session import LoopSession
from halfmq.broker.config import verified_tls

from .members import is_member_url

if TYPE_CHECKING:
    import aiohttp

CONNECT_SECONDS = 1.0  # a peer that does not accept a connection in this long is unreachable
READ_SECONDS = 5.0  # no byte of an answer for this long: a timeout (the stream's leader sends at least every stream_frames.KEEPALIVE_SECONDS)
CONNECTIONS_PER_PEER = 8  # a follower's stream and snapshot parts, a probe, an election's position ask: a few at once per peer
IDLE_SECONDS = 30.0  # a kept-alive connection idle for this long is closed
STREAM_MESSAGE_BYTES = 1 << 20  # a replication stream's message at most, unless the caller says (a run is 256 KiB of log and a header)


class PeerError(Exception):
    """A call to another node of the set did not get an answer to use (the cluster's own type for every such failure)."""


class NotAMember(PeerError):
    """The URL is not one of the set's configured members: nothing was sent."""


class PeerConnectionFailed(PeerError):
    """The connection to the peer failed: is anyone still listening there?"""


class PeerUnreachable(PeerConnectionFailed):
    """No connection could be made; ``refused``: the address refused it (nobody listens: the process is gone)."""

    def __init__(self, message: str, refused: bool) -> None:
        super().__init__(message)
        self.refused = refused


class PeerNotTrusted(PeerUnreachable):
    """The peer's certificate was not verified (not signed by a CA this node trusts, or not for its host): no request went
    out, and none will over anything weaker. A setting to fix (``HALFMQ_BROKER_PEER_CA_FILE``), not a peer that is down."""

    def __init__(self, message: str) -> None:
        super().__init__(message, refused=False)


class PeerTimeout(PeerConnectionFailed):
    """The peer took a connection but did not answer in time (stopped, or cut off)."""


class PeerDisconnected(PeerConnectionFailed):
    """The peer closed the connection before its answer was whole."""


class StreamEnded(PeerError):
    """The peer closed a stream on purpose (``code``: 4000 + the status its refusal would have had, the reason its code)."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


class PeerAnswer(PeerError):
    """The peer answered with an error status (``raise_for_status``)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class PeerRequest:
    """One call as it leaves: what a fake peer in a test sees."""

    method: str
    url: URL
    headers: Mapping[str, str]
    content: bytes


@dataclass(frozen=True)
class PeerResponse:
    """A peer's whole answer."""

    status_code: int
    content: bytes = b""
    headers: CIMultiDictProxy[str] = field(default_factory=lambda: CIMultiDictProxy(CIMultiDict()))
    url: str = ""

    @classmethod
    def of(cls, status: int, *, json: Any = None, content: bytes = b"", headers: Mapping[str, str] | None = None,
           url: str = "") -> PeerResponse:
        """An answer built by hand (a fake peer's): ``json`` is encoded as the body when given."""
        if json is not None:
            content = orjson.dumps(json)
        return cls(status, content, CIMultiDictProxy(CIMultiDict(headers or {})), url)

    def json(self) -> Any:
        return orjson.loads(self.content)

    def raise_for_status(self) -> None:
        if self.status_code >= 400:
            raise PeerAnswer(f"{self.url} answered {self.status_code}: {self.content[:200]!r}", self.status_code)


class PeerStream:
    """One WebSocket to a peer: binary messages each way; a silence of ``read_seconds`` is a ``PeerTimeout``."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse, url: str, read_seconds: float, hooks: list[AnswerHook]) -> None:
        self._ws = ws
        self._read_seconds = read_seconds
        self._hooks = hooks
        self._heard = PeerResponse(200, url=url)  # what the hooks are told at each message (the failover clock)
        self.url = url

    async def send(self, data: bytes) -> None:
        import aiohttp

        try:
            await self._ws.send_bytes(data)
        except (aiohttp.ClientError, ConnectionError, RuntimeError) as exc:  # (RuntimeError: sent on a closing socket)
            raise PeerDisconnected(f"{URL(self.url).origin()}: {exc!r}") from exc

    async def receive(self) -> bytes:
        import aiohttp

        try:
            message = await self._ws.receive(self._read_seconds)
        except TimeoutError as exc:
            raise PeerTimeout(f"nothing from {URL(self.url).origin()} for {self._read_seconds}s") from exc
        if message.type is aiohttp.WSMsgType.BINARY:
            for hook in self._hooks:
                hook(self._heard)
            return message.data  # type: ignore[no-any-return]
        if message.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSING, aiohttp.WSMsgType.CLOSED):
            code = int(message.data if message.type is aiohttp.WSMsgType.CLOSE else self._ws.close_code or 0)
            if code >= 4000:
                for hook in self._hooks:  # a refusal is an answer: the peer is alive
                    hook(self._heard)
                raise StreamEnded(f"{self.url} ended the stream: {code} {message.extra or ''}", code)
            raise PeerDisconnected(f"{URL(self.url).origin()} closed the stream ({code})")
        if message.type is aiohttp.WSMsgType.ERROR:
            raise PeerDisconnected(f"{URL(self.url).origin()}: {message.data!r}")
        raise PeerDisconnected(f"{URL(self.url).origin()} sent a {message.type.name} message on the stream")

    async def aclose(self) -> None:
        await self._ws.close()


def _unreachable(url: URL, exc: aiohttp.ClientConnectorError) -> PeerUnreachable:
    """A failed connect as the cluster's type: a certificate not verified is ``PeerNotTrusted`` (it says which setting),
    a refusal (nobody listens) ``refused``."""
    import aiohttp

    if isinstance(exc, aiohttp.ClientConnectorCertificateError):
        return PeerNotTrusted(f"cannot connect to {url.origin()}: its certificate is not trusted ({exc.certificate_error}); "
                              "HALFMQ_BROKER_PEER_CA_FILE names the CA bundle the set's members are verified with")
    cause = getattr(exc, "os_error", None)
    return PeerUnreachable(f"cannot connect to {url.origin()}: {cause or exc}", refused=isinstance(cause, ConnectionRefusedError))


Exchange = Callable[[PeerRequest], Awaitable[PeerResponse]]
AnswerHook = Callable[[PeerResponse], None]


class PeerClient:
    """``exchange``: what sends a checked request (default: aiohttp); a test gives a fake peer there."""

    def __init__(self, members: dict[str, str], token: str | None, *, exchange: Exchange | None = None,
                 connect_seconds: float = CONNECT_SECONDS, read_seconds: float = READ_SECONDS,
                 ca_file: str | os.PathLike[str] | None = None) -> None:
        """``ca_file``: the CA bundle members' https URLs are verified with (HALFMQ_BROKER_PEER_CA_FILE); None: the system's."""
        self.members = dict(members)
        self._token = token
        self._tls = verified_tls(ca_file)
        self._exchange = exchange or self._over_aiohttp
        self._connect_seconds = connect_seconds
        self._read_seconds = read_seconds
        self._session = LoopSession(self._new_session)
        self.on_answer: list[AnswerHook] = []  # called with every answer a peer gave (the follower's failover clock)

    async def get(self, url: str, params: Mapping[str, Any] | None = None) -> PeerResponse:
        return await self.request("GET", url, params=params)

    async def post(self, url: str, json: Any) -> PeerResponse:
        return await self.request("POST", url, json=json)

    async def post_as(self, url: str, json: Any, token: str | None) -> PeerResponse:
        """A POST on behalf of a client, with its own bearer token (none: no header), never the cluster's: a follower's
        Kafka front asks the leader for what the client may have (a producer id), as the client would."""
        return await self._send("POST", url, None, json, token)

    async def request(self, method: str, url: str, *, params: Mapping[str, Any] | None = None, json: Any = None) -> PeerResponse:
        return await self._send(method, url, params, json, self._token)

    async def _send(self, method: str, url: str, params: Mapping[str, Any] | None, json: Any, token: str | None) -> PeerResponse:
        target = URL(url)
        if params:
            target = target.update_query({k: str(v) for k, v in params.items()})
        if not is_member_url(str(target), self.members):
            raise NotAMember(f"{target.with_query(None)} is not a member of this broker set "
                             f"({', '.join(sorted(self.members.values()))}): not called")
        headers = {"accept-encoding": "identity"}
        if token:
            headers["authorization"] = f"Bearer {token}"
        content = b""
        if json is not None:
            content = orjson.dumps(json)
            headers["content-type"] = "application/json"
        answer = await self._exchange(PeerRequest(method, target, headers, content))
        for hook in self.on_answer:
            hook(answer)
        return answer

    async def stream(self, url: str, first: bytes, max_message_bytes: int = STREAM_MESSAGE_BYTES) -> PeerStream:
        """A WebSocket to a member (the replication stream, stream_frames.py), ``first`` sent on it; the same checks,
        token and errors as a call. Every message received counts as an answer (``on_answer``); a larger one than
        ``max_message_bytes`` ends the stream."""
        import aiohttp

        if not is_member_url(url, self.members):
            raise NotAMember(f"{URL(url).with_query(None)} is not a member of this broker set: not called")
        headers = {"authorization": f"Bearer {self._token}"} if self._token else {}
        try:
            ws = await self._session.get().ws_connect(url, headers=headers, autoping=True, compress=0,
                                                      max_msg_size=max_message_bytes)
        except aiohttp.WSServerHandshakeError as exc:
            raise PeerAnswer(f"{url} refused the stream: {exc.status} {exc.message}", exc.status) from exc
        except aiohttp.ClientConnectorError as exc:
            raise _unreachable(URL(url), exc) from exc
        except TimeoutError as exc:
            raise PeerTimeout(f"no answer from {URL(url).origin()} in time") from exc
        except aiohttp.ClientError as exc:
            raise PeerDisconnected(f"{URL(url).origin()}: {exc!r}") from exc
        stream = PeerStream(ws, url, self._read_seconds, self.on_answer)
        await stream.send(first)
        return stream

    async def _over_aiohttp(self, request: PeerRequest) -> PeerResponse:
        import aiohttp

        try:
            try:
                return await self._once(request)
            except aiohttp.ServerDisconnectedError:
                return await self._once(request)  # a kept-alive connection the peer closed while idle: once more, on a new one
        except aiohttp.ClientConnectorError as exc:  # (a certificate refused too: no connection to use)
            raise _unreachable(request.url, exc) from exc
        except TimeoutError as exc:  # aiohttp's connect and read timeouts are TimeoutErrors too
            raise PeerTimeout(f"no answer from {request.url.origin()} in time") from exc
        except aiohttp.ClientError as exc:  # closed before the answer was whole, a malformed answer
            raise PeerDisconnected(f"{request.url.origin()}: {exc!r}") from exc

    async def _once(self, request: PeerRequest) -> PeerResponse:
        async with self._session.get().request(request.method, request.url, data=request.content or None,
                                          headers=request.headers, allow_redirects=False) as resp:
            return PeerResponse(resp.status, await resp.read(), resp.headers, str(request.url))

    def _new_session(self) -> aiohttp.ClientSession:
        import aiohttp

        return aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit_per_host=CONNECTIONS_PER_PEER, keepalive_timeout=IDLE_SECONDS, ssl=self._tls),
            cookie_jar=aiohttp.DummyCookieJar(), auto_decompress=False, skip_auto_headers=("User-Agent",),
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=self._connect_seconds, sock_read=self._read_seconds))

    async def aclose(self) -> None:
        await self._session.aclose()

    async def __aenter__(self) -> PeerClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
