"""A clock a test moves by hand: decisions take a clock, so a test says when "now" is instead of sleeping.

``FakeSleep`` is the same for a loop that sleeps between passes (``sleep: Callable[[float], Awaitable[None]]``):
the next pass begins when the test wakes it, not when a timer fires.
"""

from __future__ import annotations

import asyncio


class FakeClock:
    def __init__(self, now: float = 100.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class FakeSleep:
    """An ``asyncio.sleep`` that lasts until the test calls ``wake()``; ``asked`` is every duration it was asked for.

    With a ``clock``, a wake also moves that clock on by the longest sleep it ends, as a real sleep would have.
    """

    def __init__(self, clock: FakeClock | None = None) -> None:
        self.asked: list[float] = []
        self.clock = clock
        self._sleepers: list[tuple[float, asyncio.Future[None]]] = []
        self._changed = asyncio.Event()

    async def __call__(self, seconds: float) -> None:
        self.asked.append(seconds)
        sleeper = (seconds, asyncio.get_running_loop().create_future())
        self._sleepers.append(sleeper)
        self._changed.set()
        try:
            await sleeper[1]
        finally:
            if sleeper in self._sleepers:  # cancelled while asleep
                self._sleepers.remove(sleeper)

    @property
    def sleeping(self) -> int:
        """How many sleeps are under way (not woken, not cancelled)."""
        return len(self._sleepers)

    async def until_sleeping(self, count: int = 1) -> None:
        """Return once ``count`` sleeps are under way: the code under test has finished its pass and waits for the next."""
        async with asyncio.timeout(30):  # a hang guard, not a measurement
            while len(self._sleepers) < count:
                self._changed.clear()
                await self._changed.wait()

    def wake(self) -> None:
        """End every sleep under way now (their tasks go on at their next step)."""
        woken, self._sleepers = self._sleepers, []
        if self.clock is not None and woken:
            self.clock.advance(max(seconds for seconds, _ in woken))
        for _, sleeper in woken:
            if not sleeper.done():
                sleeper.set_result(None)
