"""One aiohttp session per owner, bound to the loop it is first used on: the SDK's transport, node-to-node calls and
the broker's check-backs hold theirs this way.

aiohttp binds a session to the running loop, so it cannot be made in ``__init__`` (an owner may be built before any
loop runs); it is made at the first call, again after a close (an owner closed and used again), and closed once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # aiohttp is imported by ``make``, at the first call: an owner never used never loads it
    import aiohttp


class LoopSession:
    """``make`` builds the session with its owner's connector, timeouts and headers."""

    def __init__(self, make: Callable[[], aiohttp.ClientSession]) -> None:
        self._make = make
        self._session: aiohttp.ClientSession | None = None

    def get(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = self._make()
        return self._session

    @property
    def opened(self) -> bool:
        return self._session is not None

    async def aclose(self) -> None:
        """Close the session (idempotent; a later ``get`` makes a new one)."""
        if self._session is not None:
            await self._session.close()
            self._session = None
            await asyncio.sleep(0)  # (aiohttp closes its transports on the next turn of the loop)
