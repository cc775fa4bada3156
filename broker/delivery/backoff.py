"""When a nacked message may be delivered again, and when it has had enough tries."""

from __future__ import annotations

from collections.abc import Sequence


def retry_delay(attempt: int, delays: Sequence[float]) -> float:
    """Delay before delivery ``attempt + 1`` after delivery ``attempt`` failed (RocketMQ's level schedule)."""
    if not delays:
        return 0.0
    return float(delays[min(max(attempt, 1), len(delays)) - 1])


def exhausted(deliveries: int, max_reconsume_times: int) -> bool:
    """True once a message has been delivered 1 + max_reconsume_times times: it belongs in the DLQ."""
    return deliveries > max_reconsume_times
