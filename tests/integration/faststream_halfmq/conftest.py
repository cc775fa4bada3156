"""The FastStream broker's conformance runs twice: in memory (``TestHalfmqBroker``) and against a real broker process."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import pytest
from faststream_halfmq import HalfmqBroker, TestHalfmqBroker

Running = Callable[[HalfmqBroker], AbstractAsyncContextManager[HalfmqBroker]]


class Seen:
    """What handlers saw, and a wait for the n-th (a real broker delivers in the background)."""

    def __init__(self) -> None:
        self.items: list[Any] = []
        self._changed = asyncio.Event()

    def add(self, item: Any) -> None:
        self.items.append(item)
        self._changed.set()

    async def at_least(self, count: int, within: float = 30.0) -> list[Any]:
        async with asyncio.timeout(within):
            while len(self.items) < count:
                self._changed.clear()
                await self._changed.wait()
        return self.items


@pytest.fixture
def seen() -> Seen:
    return Seen()


@pytest.fixture(params=["in_memory", "real_broker"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def url(mode: str, request: pytest.FixtureRequest) -> str:
    """The real broker process's URL; in memory, an address nothing listens on (nothing may be sent there)."""
    if mode == "real_broker":
        return str(request.getfixturevalue("broker_url"))
    return "http://127.0.0.1:9"


@pytest.fixture
def running(mode: str) -> Running:
    """Start a broker the way the mode says: ``async with running(broker) as br:``."""

    @asynccontextmanager
    async def run(broker: HalfmqBroker) -> AsyncIterator[HalfmqBroker]:
        if mode == "in_memory":
            async with TestHalfmqBroker(broker) as br:
                yield br
        else:
            async with broker:
                await broker.start()
                yield broker

    return run
