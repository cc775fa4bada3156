"""Per (group, topic, queue) delivery bookkeeping: who holds what, and how far acks reach.

Pure data with an explicit clock value passed in, so every rule (invisibility,
contiguous commit, stale receipts) is testable without sleeping.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class InFlight:
    offset: int
    nonce: int
    deliveries: int
    visible_at: float
    nacked: bool = False  # how its latest delivery ended: a nack (True) or, once due again, its invisible time ran out


@dataclass
class QueueProgress:
    committed: int
    cursor: int = -1
    in_flight: dict[int, InFlight] = field(default_factory=dict)
    acked: set[int] = field(default_factory=set)
    _nonce: int = 0

    def __post_init__(self) -> None:
        if self.cursor < self.committed:
            self.cursor = self.committed

    def deliver_new(self, now: float, invisible: float) -> InFlight:
        """Hand out the next never-delivered offset."""
        self._nonce += 1
        item = InFlight(self.cursor, self._nonce, 1, now + invisible)
        self.in_flight[self.cursor] = item
        self.cursor += 1
        return item

    def pass_acked(self) -> bool:
        """Step over the next offset if it is already acked (restored from a committed producer transaction)."""
        if self.cursor < self.committed or (self.acked and self.cursor in self.acked):
            self.cursor += 1
            return True
        return False

    def skip(self) -> bool:
        """Pass over the next offset without delivering it (its record is damaged); True when committed moved."""
        offset = self.cursor
        self.cursor += 1
        return self.settle(offset)

    def redeliver(self, offset: int, now: float, invisible: float) -> InFlight:
        item = self.in_flight[offset]
        self._nonce += 1
        item.nonce = self._nonce
        item.deliveries += 1
        item.visible_at = now + invisible
        item.nacked = False
        return item

    def holds(self, offset: int, nonce: int) -> bool:
        item = self.in_flight.get(offset)
        return item is not None and item.nonce == nonce

    def settle(self, offset: int) -> bool:
        """Mark ``offset`` done; return True when the committed offset moved."""
        self.in_flight.pop(offset, None)
        if offset < self.committed:
            return False
        self.acked.add(offset)
        moved = False
        while self.committed in self.acked:
            self.acked.discard(self.committed)
            self.committed += 1
            moved = True
        return moved

    def postpone(self, offset: int, visible_at: float) -> InFlight:
        item = self.in_flight[offset]
        item.visible_at = visible_at
        return item


@dataclass
class GroupTopic:
    """One group's progress on one topic: its queues, and the deliveries due to be visible again."""

    queues: list[QueueProgress]
    due: list[tuple[float, int, int, int]] = field(default_factory=list)  # (visible_at, queue, offset, nonce)
    rotation: int = 0


@dataclass(frozen=True, slots=True)
class QueueLag:
    queue_id: int
    committed_offset: int
    max_offset: int
    lag: int
    in_flight: int
