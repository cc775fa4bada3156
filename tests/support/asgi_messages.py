"""An ASGI ``receive`` that hands over a request body in chunks, as a server would, for unit tests of ASGI code."""

from __future__ import annotations

from typing import Any


def chunks(*bodies: bytes, hang_up: bool = False) -> Any:
    """``receive`` yielding ``bodies`` (then a disconnect if ``hang_up``); ``receive.read`` counts the calls."""
    messages = [{"type": "http.request", "body": b, "more_body": i < len(bodies) - 1 or hang_up} for i, b in enumerate(bodies)]
    if hang_up:
        messages.append({"type": "http.disconnect"})
    read: list[int] = []

    async def receive() -> dict[str, Any]:
        read.append(1)
        return messages[len(read) - 1]

    receive.read = read  # type: ignore[attr-defined]
    return receive
