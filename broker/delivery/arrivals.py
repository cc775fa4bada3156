"""Long polls waiting for a topic's next message, woken when one may be handed out, or when the service closes.

One event per topic that someone waits on: a write the visible reads reveal (``store.visible``'s listener), a nack
or release that makes a delivery due again, a settle that readies a message group's next message. A woken poll looks
again; it never learns what changed, so a spurious wake costs one look.
"""

from __future__ import annotations

import asyncio
import contextlib


class Arrivals:
    def __init__(self) -> None:
        self._events: dict[str, asyncio.Event] = {}
        self.closing = False

    def wake(self, topic: str, queue_id: int = -1) -> None:
        """Wake every poll waiting on ``topic`` (the store's listener signature: any queue of it)."""
        event = self._events.pop(topic, None)
        if event is not None:
            event.set()

    async def wait(self, topic: str, seconds: float) -> None:
        """Until ``topic`` is woken or ``seconds`` pass, whichever is first (a receive's long poll, its next due time)."""
        event = self._events.setdefault(topic, asyncio.Event())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(event.wait(), seconds)

    async def wait_any(self, topics: list[str], seconds: float) -> None:
        """Until one of ``topics`` is woken or ``seconds`` pass (a Kafka Fetch over several topics). Each topic's event
        is taken before the first await, so a wake between the caller's last read and this wait is not missed."""
        if self.closing:
            return
        events = [self._events.setdefault(topic, asyncio.Event()) for topic in dict.fromkeys(topics)]
        waits = [asyncio.ensure_future(event.wait()) for event in events]
        try:
            await asyncio.wait(waits, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waits:
                w.cancel()

    def close(self) -> None:
        """End every poll now (shutdown must not wait for idle consumers); they answer with what they have."""
        self.closing = True
        for topic in list(self._events):
            self.wake(topic)
