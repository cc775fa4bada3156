"""The Kafka listener: an asyncio server whose connections read frames and write the dispatcher's answers.

A connection handles its requests one at a time, in the order they came, and answers them in that order (Kafka's
clients pipeline requests and match answers by order as well as by correlation id). A request whose work is done
with only a wait left (a Produce's flush: dispatch.PendingAnswer) does not hold the next one back: its answer is
awaited by the connection's writer, in its turn, while the reader goes on, up to ``max_pending`` answers waiting
(then the reader waits too). This code only moves bytes; what to answer is dispatch.py's. Each connection is read
in its own task, so a SASL principal set on it (sasl.py) is that connection's alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl

from .dispatch import Dispatcher, PendingAnswer
from .framing import MAX_FRAME_BYTES, FrameRefused, read_frame
from .request_header import HeaderUnreadable
from .sasl import NotAuthenticated

log = logging.getLogger(__name__)

MAX_PENDING_ANSWERS = 16
"""Answers one connection may have waiting for their flush before its next request is read (Kafka's clients keep at
most five requests in flight per connection with idempotence)."""
CLOSE = b""


class KafkaListener:
    def __init__(self, dispatcher: Dispatcher, max_frame_bytes: int = MAX_FRAME_BYTES, max_pending: int = MAX_PENDING_ANSWERS) -> None:
        self.dispatcher = dispatcher
        self.max_frame_bytes = max_frame_bytes
        self.max_pending = max_pending
        self.server: asyncio.Server | None = None

    async def start(self, host: str, port: int, tls: ssl.SSLContext | None = None) -> int:
        """Listen on ``host:port`` (0: a free port), over TLS with ``tls``; returns the port bound."""
        self.server = await asyncio.start_server(self.serve_connection, host, port, ssl=tls)
        return int(self.server.sockets[0].getsockname()[1])

    async def stop(self) -> None:
        server, self.server = self.server, None
        if server is not None:
            server.close()
            await server.wait_closed()

    async def serve_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        answers: asyncio.Queue[bytes | None | PendingAnswer] = asyncio.Queue(self.max_pending)
        writing = asyncio.ensure_future(write_answers(answers, writer))
        try:
            while (payload := await read_frame(reader, self.max_frame_bytes)) is not None:
                await answers.put(await self.dispatcher.begin(payload))
        except (FrameRefused, HeaderUnreadable, NotAuthenticated) as exc:
            log.warning("Kafka connection from %s closed: %s", peer, exc)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the client went away inside a frame
        finally:
            await answers.put(CLOSE)  # the answers begun are written first
            await writing
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()


async def write_answers(answers: asyncio.Queue[bytes | None | PendingAnswer], writer: asyncio.StreamWriter) -> None:
    """Each answer in the order its request came, a pending one once its wait ends, until CLOSE. Once the client is
    gone, the answers are still taken (their work goes on) but not written, until the reader sees the end too."""
    gone = False
    while (answer := await answers.get()) is not CLOSE:
        if isinstance(answer, PendingAnswer):
            answer = await answer
        if answer is not None and not gone:
            try:
                writer.write(answer)
                await writer.drain()
            except ConnectionError:
                gone = True
