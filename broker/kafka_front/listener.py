"""The Kafka listener: an asyncio server whose connections read frames and write the dispatcher's answers.

A connection answers its requests one at a time, in the order they came (Kafka's clients pipeline requests and
match answers by order as well as by correlation id). This loop only moves bytes; what to answer is dispatch.py's.
Each connection is served in its own task, so a SASL principal set on it (sasl.py) is that connection's alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from .dispatch import Dispatcher
from .framing import MAX_FRAME_BYTES, FrameRefused, read_frame
from .request_header import HeaderUnreadable
from .sasl import NotAuthenticated

log = logging.getLogger(__name__)


class KafkaListener:
    def __init__(self, dispatcher: Dispatcher, max_frame_bytes: int = MAX_FRAME_BYTES) -> None:
        self.dispatcher = dispatcher
        self.max_frame_bytes = max_frame_bytes
        self.server: asyncio.Server | None = None

    async def start(self, host: str, port: int) -> int:
        """Listen on ``host:port`` (0: a free port); returns the port bound."""
        self.server = await asyncio.start_server(self.serve_connection, host, port)
        return int(self.server.sockets[0].getsockname()[1])

    async def stop(self) -> None:
        server, self.server = self.server, None
        if server is not None:
            server.close()
            await server.wait_closed()

    async def serve_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        try:
            while (payload := await read_frame(reader, self.max_frame_bytes)) is not None:
                answer = await self.dispatcher.answer(payload)
                if answer is not None:
                    writer.write(answer)
                    await writer.drain()
        except (FrameRefused, HeaderUnreadable, NotAuthenticated) as exc:
            log.warning("Kafka connection from %s closed: %s", peer, exc)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the client went away inside a frame or while its answer was written
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()
