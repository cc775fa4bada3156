"""Fakes at the true edges of the transaction layer: the clock and the producer's HTTP answer."""

from __future__ import annotations

from collections import deque

from halfmq.broker.half_messages.check_client import CheckAnswer, CheckOutcome


class FakeClock:
    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class ScriptedCheckClient:
    """Answers check-backs from a script; records every call. Default answer: unknown."""

    def __init__(self) -> None:
        self.script: deque[CheckOutcome] = deque()
        self.calls: list[tuple[str, dict]] = []
        self.raising: set[str] = set()  # URLs whose call raises, as an unforeseen failure would

    async def check(self, url: str, payload: dict, address: str | None = None) -> CheckAnswer:
        self.calls.append((url, payload))
        if url in self.raising:
            raise RuntimeError(f"unforeseen failure calling {url}")
        outcome = self.script.popleft() if self.script else CheckOutcome.UNKNOWN
        return CheckAnswer(outcome)

    async def aclose(self) -> None:
        pass
