"""Reading an ASGI request body under a size cap.

Both HTTP servers hand a body over in chunks as it arrives, so counting the
chunks refuses an oversized body at most one chunk past the cap, before it is
ever held whole; a declared ``Content-Length`` over the cap is refused before
the first chunk is read.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from broker.errors import RequestTooLarge

Receive = Callable[[], Awaitable[Mapping[str, Any]]]


class ClientGone(Exception):
    """The client hung up before its request body arrived; nothing was done and nobody is left to answer."""


def too_large(limit: int) -> RequestTooLarge:
    return RequestTooLarge(f"a request body is at most {limit} bytes; send smaller batches", limit=limit)


def declared_length(scope: Mapping[str, Any]) -> int | None:
    for name, value in scope["headers"]:
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def read_body(receive: Receive, limit: int) -> bytes:
    """The whole body; RequestTooLarge as soon as it passes ``limit``, ClientGone if the client hangs up."""
    chunks = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientGone()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise too_large(limit)
        chunks.append(chunk)
        if not message.get("more_body", False):
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)
