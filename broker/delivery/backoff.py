"""A consumer group's delivery policy: when a nacked message may be delivered again, when it has had enough tries,
how far FIFO delivery reads past a queue's committed offset, and whether deliveries are journaled."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

DLQ_RETRY_SECONDS = 1.0  # a DLQ move the disk refused is tried again this much later
READY_POLL_SECONDS = 0.02  # a long poll's look again at a group's next message held until its predecessor's ack is durable
FIFO_WINDOW = 20_000  # how far past committed a queue's cursor may go while messages wait behind their group


@dataclass(frozen=True, slots=True)
class DeliveryPolicy:
    max_reconsume_times: int = 16
    retry_delays: Sequence[float] = (10, 30, 60)
    fifo_window: int = FIFO_WINDOW
    journal: bool = True  # deliveries and nacks written to the journal, acks indexed by place (journal.py); off: neither
    max_groups: int = 10_000  # consumer groups a receive may begin (their progress is held in memory): past it, refused


def retry_delay(attempt: int, delays: Sequence[float]) -> float:
    """Delay before delivery ``attempt + 1`` after delivery ``attempt`` failed (RocketMQ's level schedule)."""
    if not delays:
        return 0.0
    return float(delays[min(max(attempt, 1), len(delays)) - 1])


def exhausted(deliveries: int, max_reconsume_times: int) -> bool:
    """True once a message has been delivered 1 + max_reconsume_times times: it belongs in the DLQ."""
    return deliveries > max_reconsume_times
