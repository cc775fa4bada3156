"""How the consumer loop (``consumer.AsyncConsumer``) polls, as pure parts tested with plain numbers.

``PollSettings`` is the one definition of a loop's settings and their checks,
made at construction so a bad value fails there and not on the first poll
inside ``run()``; ``PollFailures`` is the backoff after a failed poll, so a
loop keeps going without hammering a broker that is coming back.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from halfmq.errors import BrokerError
from halfmq.wire import ReceiveRequest

from .retry import backoff_delay

__all__ = ["PREFETCH_SHARE", "PollFailures", "PollSettings", "prefetch_next"]

log = logging.getLogger("halfmq.client.consumer")


@dataclass(frozen=True, slots=True)
class PollSettings:
    """Messages per poll, how long they stay invisible, how long a poll waits, handlers run at once, the tag filter."""

    max_messages: int
    invisible_seconds: float
    wait_seconds: float
    concurrency: int
    tags: list[str] | None = None  # the tag filter, as the request sends it (None: every message)

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        # The broker's own bounds, checked by the model the request is sent as.
        ReceiveRequest(max_messages=self.max_messages, invisible_seconds=self.invisible_seconds, wait_seconds=self.wait_seconds,
                       tags=self.tags)


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
        """A poll answered: the next failure waits the shortest time again."""
        self.count = 0


# Ask for the next batch while this one is handled only when a batch takes at most this
# share of invisible_seconds: the prefetched messages' invisibility runs while they wait.
PREFETCH_SHARE = 0.25


def prefetch_next(last_batch_seconds: float | None, invisible_seconds: float) -> bool:
    """Whether the loop should have its next receive in flight while handling a batch.

    Pipelining hides the receive round trip behind the handlers and the ack,
    but the prefetched batch is invisible to other consumers from the moment
    it is handed out, and its timer runs while it waits its turn. So a loop
    prefetches only while its batches are quick next to ``invisible_seconds``
    (the first batch, not yet timed, is not prefetched behind).
    """
    return last_batch_seconds is not None and last_batch_seconds <= invisible_seconds * PREFETCH_SHARE
