"""Kafka's framing: every request and answer is a big-endian int32 size, then that many bytes.

The size is the one number a client controls before anything else, so it is checked before a byte of the frame is
read; a frame that cannot be read (too large, negative, cut short) ends the connection, since the stream has no other
boundary to resynchronise on (Kafka's broker does the same).
"""

from __future__ import annotations

import asyncio
import struct

MAX_FRAME_BYTES = 32 * 1024 * 1024
"""The largest request frame the front reads, in bytes (the size prefix not counted).

The HTTP front's default request bound (config.default_max_request_bytes: 32 MiB), so a batch the HTTP front takes
fits here too; Kafka's own ``socket.request.max.bytes`` is 100 MiB. A setting later (``HALFMQ_BROKER_KAFKA_*``), when
the listener is wired into the broker."""

SIZE = struct.Struct(">i")


class FrameRefused(Exception):
    """A frame the front will not read: its size is negative or over the bound. The connection ends."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"Kafka frame of {size} bytes refused (the bound is {limit})")
        self.size = size
        self.limit = limit


async def read_frame(reader: asyncio.StreamReader, max_frame_bytes: int = MAX_FRAME_BYTES) -> bytes | None:
    """The next frame's payload; None when the client closed the connection between frames.

    Raises FrameRefused before reading the payload when the size is out of bounds, and asyncio.IncompleteReadError
    when the stream ends inside a frame."""
    try:
        head = await reader.readexactly(SIZE.size)
    except asyncio.IncompleteReadError as exc:
        if not exc.partial:
            return None
        raise
    (size,) = SIZE.unpack(head)
    if size < 0 or size > max_frame_bytes:
        raise FrameRefused(size, max_frame_bytes)
    return await reader.readexactly(size)


def frame(payload: bytes | bytearray | memoryview) -> bytes:
    """``payload`` with its size in front, as it goes on the wire."""
    return SIZE.pack(len(payload)) + bytes(payload)
