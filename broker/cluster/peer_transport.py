"""A lean HTTP/1.1 transport for the calls between a set's nodes: the replication fetches and acks go through it.

httpx's own transport (httpcore over anyio) costs about half a millisecond of CPU a
request; a follower makes two or three hundred a second under load, which was most of
its CPU (issue 32, R3: 588 against 20 us a request, measured with py-spy and a
process-time probe). This one writes the request in one ``write`` over a kept-alive
asyncio stream and reads the answer with a content length or chunked; httpx's client
above it (PeerClient: the member check, the token, the hooks) is unchanged. A reused
connection the peer closed meanwhile is retried once on a new one; a failure maps to
httpx's errors (a refused connect is a ConnectError caused by ConnectionRefusedError).
HTTPS goes through httpx's default transport. Why this and not aiohttp: decision 047 (aiohttp is cheaper still; the move is its follow-up).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import httpx

MAX_IDLE = 4  # kept-alive connections per peer
BUFFER = 2 << 20  # a stream's buffer: a whole fetch answer (1 MiB) without pausing the socket
NO_BODY = frozenset({204, 304})

_Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter]


class _Stale(Exception):
    """A reused connection ended before any byte of the answer: the peer closed it while it was idle."""


class PeerTransport(httpx.AsyncBaseTransport):
    def __init__(self) -> None:
        self._idle: dict[tuple[str, int], list[_Connection]] = {}
        self._tls = httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.scheme != "http":
            return await self._tls.handle_async_request(request)
        body = await request.aread()
        head = [f"{request.method} {request.url.raw_path.decode('ascii')} HTTP/1.1\r\n".encode()]
        for name, value in request.headers.raw:
            if name.lower() != b"accept-encoding":  # answers come as they are (a body is never decoded here)
                head.append(b"%s: %s\r\n" % (name, value))
        head.append(b"accept-encoding: identity\r\n\r\n")
        data = b"".join(head) + body
        timeouts: dict[str, float | None] = request.extensions.get("timeout", {})
        key = (request.url.host, request.url.port or 80)
        idle = self._idle.get(key)
        if idle:
            try:
                return await self._exchange(request, key, idle.pop(), data, timeouts, reused=True)
            except _Stale:
                pass
        return await self._exchange(request, key, await self._connect(request, key, timeouts.get("connect")), data, timeouts,
                                    reused=False)

    async def _connect(self, request: httpx.Request, key: tuple[str, int], seconds: float | None) -> _Connection:
        try:
            async with asyncio.timeout(seconds):
                return await asyncio.open_connection(*key, limit=BUFFER)
        except TimeoutError as exc:
            raise httpx.ConnectTimeout(f"connect to {key[0]}:{key[1]} timed out", request=request) from exc
        except OSError as exc:
            raise httpx.ConnectError(str(exc), request=request) from exc

    async def _exchange(self, request: httpx.Request, key: tuple[str, int], conn: _Connection, data: bytes,
                        timeouts: dict[str, float | None], reused: bool) -> httpx.Response:
        reader, writer = conn
        keep = answered = False
        try:
            try:
                writer.write(data)
                async with asyncio.timeout(timeouts.get("read")):
                    try:
                        status_line = await reader.readuntil(b"\r\n")
                    except asyncio.IncompleteReadError as exc:
                        if reused and not exc.partial:
                            raise _Stale from exc
                        raise
                    status, headers, keep = _head(status_line, await reader.readuntil(b"\r\n\r\n"))
                    content, keep = await _body(reader, headers, keep, request.method == "HEAD" or status in NO_BODY or status < 200)
                    answered = True
            except TimeoutError as exc:
                raise httpx.ReadTimeout(f"no answer from {key[0]}:{key[1]} in time", request=request) from exc
            except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError, ValueError) as exc:
                if reused and isinstance(exc, ConnectionError):
                    raise _Stale from exc
                raise httpx.RemoteProtocolError(f"{key[0]}:{key[1]}: {exc!r}", request=request) from exc
        finally:
            if answered and keep and len(self._idle.setdefault(key, [])) < MAX_IDLE:
                self._idle[key].append(conn)
            else:
                writer.close()
        return httpx.Response(status, headers=headers, content=content, request=request,
                              extensions={"http_version": b"HTTP/1.1"})

    async def aclose(self) -> None:
        for conns in self._idle.values():
            for _, writer in conns:
                writer.close()
        self._idle.clear()
        await self._tls.aclose()


def _head(status_line: bytes, rest: bytes) -> tuple[int, list[tuple[bytes, bytes]], bool]:
    """The status, the headers and whether the connection stays open after this answer."""
    version, status, _ = status_line.split(b" ", 2)
    headers = []
    keep = version == b"HTTP/1.1"
    for line in rest.split(b"\r\n"):
        if not line:
            continue
        name, _, value = line.partition(b":")
        name, value = name.strip(), value.strip()
        headers.append((name, value))
        if name.lower() == b"connection":
            keep = value.lower() != b"close"
    return int(status), headers, keep


async def _body(reader: asyncio.StreamReader, headers: list[tuple[bytes, bytes]], keep: bool, empty: bool) -> tuple[bytes, bool]:
    """The answer's body, and whether the connection may carry another request after it."""
    if empty:
        return b"", keep
    fields: dict[bytes, Any] = {name.lower(): value for name, value in headers}
    if (length := fields.get(b"content-length")) is not None:
        return await reader.readexactly(int(length)), keep
    if fields.get(b"transfer-encoding", b"").lower() == b"chunked":
        chunks = []
        while size := int((await reader.readuntil(b"\r\n")).split(b";", 1)[0], 16):
            chunks.append(await reader.readexactly(size))
            await reader.readexactly(2)
        with contextlib.suppress(asyncio.IncompleteReadError):
            while (await reader.readuntil(b"\r\n")) != b"\r\n":  # trailers, then the blank line
                pass
        return b"".join(chunks), keep
    return await reader.read(), False  # no length: the body runs to the end of the connection
