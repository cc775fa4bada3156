"""How a consumer loop polls, shared by the thread and asyncio consumers.

``PollSettings`` is the one definition of a loop's settings and their checks,
made at construction so a bad value fails there and not on the first poll
inside ``run()``; ``PollFailures`` is the backoff after a failed poll, so a
loop keeps going without hammering a broker that is coming back.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from halfmq.broker.errors import BrokerError
from halfmq.broker.wire import ReceiveRequest

from .retry import backoff_delay

__all__ = ["PollFailures", "PollSettings"]

log = logging.getLogger("halfmq.client.consumer")


@dataclass(frozen=True, slots=True)
class PollSettings:
    """Messages per poll, how long they stay invisible, how long a poll waits, handlers run at once."""

    max_messages: int
    invisible_seconds: float
    wait_seconds: float
    concurrency: int

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        # The broker's own bounds, checked by the model the request is sent as.
        ReceiveRequest(max_messages=self.max_messages, invisible_seconds=self.invisible_seconds, wait_seconds=self.wait_seconds)


class PollFailures:
    """Consecutive failed polls of one topic, and how long to wait after the latest."""

    def __init__(self, topic: str) -> None:
        self.topic = topic
        self.count = 0

    def failed(self, exc: BrokerError) -> float:
        """Seconds to wait before the next poll (logged with the failure)."""
        self.count += 1
        delay = backoff_delay(self.count)
        level = logging.WARNING if exc.retriable else logging.ERROR
        log.log(level, "receive from %s failed (%s); retrying in %.2fs", self.topic, exc, delay)
        return delay

    def succeeded(self) -> None:
        self.count = 0
