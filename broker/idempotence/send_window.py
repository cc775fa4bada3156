"""An idempotent producer's window of sequence numbers (DESIGN section 11), as Kafka's max.in.flight.

The SDK keeps many numbered sends in flight, so they reach the broker out of
order and a retry may come back after later sends were stored. Per producer
id and epoch the broker keeps the contiguous high-water mark H (every number
up to H is stored) and the answers of the last ``size`` numbers. ``decide``
is the whole rule, pure; ``SendWindow`` is the state it reads, updated only
once a send is stored.

What a number's "answer" is, is the caller's (``producer_ids.SentRef``: where the
send's records start and how many there are, a constant size whatever the send
held). A window holds at most ``2 * size - 1`` numbers: ``size`` at or below H,
the rest stored out of order above it.
"""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

DEFAULT_SIZE = 1024


class Verdict(str, Enum):
    STORE = "store"  # new, inside the window: store it (arriving out of order is normal)
    REPEAT = "repeat"  # stored and its answer remembered: answer that, store nothing
    OLD_REPEAT = "old_repeat"  # stored (at or below H) but its answer is forgotten: success, store nothing
    TOO_FAR = "too_far"  # beyond H + size: a gap the window cannot hold, OUT_OF_ORDER_SEQUENCE


def decide(high: int, remembered: Container[int], size: int, sequence: int) -> Verdict:
    """What a send numbered ``sequence`` gets, given the high-water mark and the numbers whose answers are kept."""
    if sequence in remembered:
        return Verdict.REPEAT
    if sequence <= high:
        return Verdict.OLD_REPEAT
    if sequence > high + size:
        return Verdict.TOO_FAR
    return Verdict.STORE


@dataclass
class SendWindow:
    """The stored numbers of one producer id and epoch: H, and the answers of numbers above H - size."""

    size: int = DEFAULT_SIZE
    high: int = -1
    answers: dict[int, Any] = field(default_factory=dict)

    def decide(self, sequence: int) -> Verdict:
        return decide(self.high, self.answers, self.size, sequence)

    def growth(self, sequence: int) -> int:
        """How many more numbers the window remembers once ``sequence`` is stored: 1, or less as H passes old ones.

        What a principal's cap on remembered numbers is checked against before the send is written (``stored``
        then changes the window by exactly this much).
        """
        if sequence <= self.high - self.size or sequence in self.answers:
            return 0
        high, forgotten = self.high, 0
        while high + 1 == sequence or high + 1 in self.answers:
            high += 1
            forgotten += (high - self.size) in self.answers
        return 1 - forgotten

    def stored(self, sequence: int, answer: Any) -> int:
        """Record a stored send; H moves over every contiguous number, forgetting what falls out of the window.

        Returns how many more numbers the window remembers now (``growth``; negative when H passed several).
        """
        if sequence <= self.high - self.size:  # already forgotten (a replayed record): nothing to keep
            return 0
        before = len(self.answers)
        self.answers[sequence] = answer
        while self.high + 1 in self.answers:
            self.high += 1
            self.answers.pop(self.high - self.size, None)
        return len(self.answers) - before

    @property
    def next_expected(self) -> int:
        return self.high + 1
