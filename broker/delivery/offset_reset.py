"""The plan of a consumer group's offset reset: per queue, where its committed offset is and where it goes.

A pure decision (Kafka's ``kafka-consumer-groups.sh --reset-offsets``, RocketMQ's ``resetOffsetByTime``): the
caller reads each queue's position (its committed offset, its retained range, and for a time target the first
offset stored at or after that time) and this says where each queue goes, clamped to what the queue holds, so a
dry run and the reset itself are the same plan. A queue with deliveries in flight refuses the plan unless forced:
their consumers would ack offsets the reset has already moved past or not reached yet.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from halfmq.errors import GroupHasInFlight, InvalidOffsetReset


class ResetTarget(str, Enum):
    EARLIEST = "earliest"
    LATEST = "latest"
    TIMESTAMP = "timestamp"  # the first message stored at or after ``timestamp_ms``
    DURATION = "duration"  # the first message stored at or after ``ago_ms`` before now
    OFFSET = "offset"  # a queue offset (clamped to the queue's range)


@dataclass(frozen=True, slots=True)
class ResetTo:
    target: ResetTarget
    timestamp_ms: int | None = None
    ago_ms: int | None = None
    offset: int | None = None

    def at_ms(self, now_ms: int) -> int | None:
        """The time a time target names (None for the others): what the store is asked for each queue's offset."""
        if self.target is ResetTarget.TIMESTAMP:
            if self.timestamp_ms is None:
                raise InvalidOffsetReset("a reset to a timestamp needs timestamp_ms")
            return self.timestamp_ms
        if self.target is ResetTarget.DURATION:
            if self.ago_ms is None or self.ago_ms < 0:
                raise InvalidOffsetReset("a reset to a duration ago needs ago_ms >= 0")
            return now_ms - self.ago_ms
        if self.target is ResetTarget.OFFSET and (self.offset is None or self.offset < 0):
            raise InvalidOffsetReset("a reset to an offset needs offset >= 0")
        return None


@dataclass(frozen=True, slots=True)
class QueuePosition:
    queue_id: int
    committed: int
    first: int  # the queue's first retained offset
    end: int  # one past its last
    in_flight: int  # deliveries held by consumers now
    at_time: int | None = None  # the first offset stored at or after the target's time (time targets only)


@dataclass(frozen=True, slots=True)
class QueueMove:
    queue_id: int
    from_offset: int
    to_offset: int
    in_flight: int


def plan_reset(positions: list[QueuePosition], to: ResetTo, *, force: bool) -> list[QueueMove]:
    """Where each queue's committed offset goes; GroupHasInFlight when a queue holds deliveries and ``force`` is not set."""
    if to.target is ResetTarget.OFFSET and (to.offset is None or to.offset < 0):
        raise InvalidOffsetReset("a reset to an offset needs offset >= 0")
    moves = [QueueMove(p.queue_id, p.committed, _target(p, to), p.in_flight) for p in positions]
    held = [m for m in moves if m.in_flight]
    if held and not force:
        raise GroupHasInFlight(
            f"{sum(m.in_flight for m in held)} deliveries in flight on queues {[m.queue_id for m in held]}: "
            "wait until they are acked or their invisible time ends, or force the reset (they are delivered again)")
    return moves


def _target(p: QueuePosition, to: ResetTo) -> int:
    if to.target is ResetTarget.EARLIEST:
        wanted = p.first
    elif to.target is ResetTarget.LATEST:
        wanted = p.end
    elif to.target is ResetTarget.OFFSET:
        assert to.offset is not None
        wanted = to.offset
    else:
        if p.at_time is None:
            raise InvalidOffsetReset("a time target needs each queue's offset at that time")
        wanted = p.at_time
    return min(max(wanted, p.first), p.end)
