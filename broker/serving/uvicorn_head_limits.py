"""uvicorn's httptools protocol with the two request-head limits granian has built in.

Stock uvicorn arms its keep-alive timer only once a response is sent and
cancels it on every byte received, so a connection that never sends a request,
or trickles a header a byte at a time, stays open for ever; and httptools keeps
any header block, 20 MB included, until its end arrives. granian (hyper) runs
``header_read_timeout`` from the moment a connection waits for a request head,
fresh or kept alive, until the head is complete, and answers 431 to a head over
its buffer. This protocol does the same, so both servers shed idle and slow
connections alike.

It also lets the broker's hot path write a response's head and body in one
``send``: stock uvicorn writes the head on ``http.response.start`` and the body
on ``http.response.body``, two syscalls (and two segments, TCP_NODELAY being
on) per answer. Profiled under half + end pairs at 64 in flight, those two
writes were 17 % of the event loop's samples. The protocol hands each request a
``CorkedTransport`` in ``scope["extensions"]["halfmq.cork"]``; the hot path
corks it around its two ``send`` calls (broker/api/front.py). Everything else (FastAPI
routes, streams, ``100 Continue``) writes through at once, as before.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from .cork import CORK

_HEAD_TOO_LARGE = b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"


class CorkedTransport:
    """A connection's transport that, while corked, keeps writes and sends them as one on ``uncork``.

    Not corked it is the transport itself; ``close`` sends what is kept first.
    """

    __slots__ = ("_kept", "_transport")

    def __init__(self, transport: asyncio.Transport) -> None:
        self._transport = transport
        self._kept: list[bytes] | None = None

    def cork(self) -> None:
        if self._kept is None:
            self._kept = []

    def uncork(self) -> None:
        kept, self._kept = self._kept, None
        if kept:
            self._transport.write(b"".join(kept))

    def write(self, data: bytes) -> None:
        if self._kept is None:
            self._transport.write(data)
        else:
            self._kept.append(data)

    def close(self) -> None:
        self.uncork()
        self._transport.close()

    def __getattr__(self, name: str) -> Any:  # is_closing, pause_reading, get_extra_info, ...
        return getattr(self._transport, name)


class _HeadLimitedHttpToolsProtocol(HttpToolsProtocol):
    head_timeout: float  # set per server by head_limited_httptools
    max_head_bytes: int
    _deadline: asyncio.TimerHandle | None = None
    _awaiting_head = False
    _head_bytes = 0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.transport = CorkedTransport(transport)  # type: ignore[assignment]  # each request's cycle writes through it
        self._await_head()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_deadline()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._awaiting_head:
            self._head_bytes += len(data)
        super().data_received(data)
        # Counted per read, so a head may run over by one read; the block is never kept whole.
        if self._awaiting_head and self._head_bytes > self.max_head_bytes and not self.transport.is_closing():
            self.transport.write(_HEAD_TOO_LARGE)
            self.transport.close()

    def on_headers_complete(self) -> None:
        self._awaiting_head = False
        self._stop_deadline()
        super().on_headers_complete()
        extensions: dict[Any, Any] = self.scope.setdefault("extensions", {})  # uvicorn types it dict[object, object]
        extensions[CORK] = self.transport  # read by the app before it runs

    def on_response_complete(self) -> None:
        idle_next = not self.pipeline  # a pipelined request already has its head
        super().on_response_complete()
        if idle_next and not self.transport.is_closing():
            self._await_head()

    def _await_head(self) -> None:
        self._awaiting_head = True
        self._head_bytes = 0
        self._stop_deadline()
        self._deadline = self.loop.call_later(self.head_timeout, self._head_timed_out)

    def _head_timed_out(self) -> None:
        self._deadline = None
        if self._awaiting_head and not self.transport.is_closing():
            self.transport.close()

    def _stop_deadline(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None


def head_limited_httptools(head_timeout: float, max_head_bytes: int) -> type[HttpToolsProtocol]:
    """The protocol class for ``uvicorn.Config(http=...)``, with these limits."""
    return type("HeadLimitedHttpToolsProtocol", (_HeadLimitedHttpToolsProtocol,),
                {"head_timeout": head_timeout, "max_head_bytes": max_head_bytes})
