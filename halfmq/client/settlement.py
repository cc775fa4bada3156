"""What the consumer loop does with each message of a batch once its handler is done.

One ack request for the successes, one nack request for the failures and for
messages that were received but never handed to the handler (released on stop).
``settle_batch`` is that as a step sequence (sans-I/O), so the decisions are
tested with plain values and the loop only performs the requests
(``step_drivers.run_steps_async``).
"""

from __future__ import annotations

import logging
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Literal

from halfmq.errors import BrokerError
from halfmq.wire import Message, SettleResult, SettleStatus

__all__ = ["Outcome", "Settle", "log_expired", "log_handler_failure", "settle_batch"]

log = logging.getLogger("halfmq.client.consumer")


class Outcome(Enum):
    """What became of one message of a batch, which decides how it is settled."""

    ACK = "ack"
    NACK = "nack"
    # Received but never started because the consumer is stopping: give it
    # back now rather than leave it invisible until its timer runs out.
    RELEASE = "release"


@dataclass(frozen=True, slots=True)
class Settle:
    """Ack or nack these receipt handles and send back the broker's results."""

    action: Literal["ack", "nack"]
    handles: list[str]


def settle_batch(batch: Sequence[Message], outcomes: Sequence[Outcome]) -> Generator[Settle, list[SettleResult], None]:
    """The ack, then the nack, of a batch; a failed one is logged, not raised (its messages come back on their own)."""
    handled = [(m.receipt_handle, o) for m, o in zip(batch, outcomes, strict=True) if m.receipt_handle is not None]
    acks, nacks = [h for h, o in handled if o is Outcome.ACK], [h for h, o in handled if o is not Outcome.ACK]  # in batch order
    for settle in (Settle("ack", acks), Settle("nack", nacks)):
        if not settle.handles:
            continue
        try:
            log_expired(settle.action, (yield settle))
        except BrokerError as exc:
            # Unsettled messages come back after invisible_seconds.
            log.warning("%s of %d message(s) failed: %s", settle.action, len(settle.handles), exc)


def log_handler_failure(message: Message, exc: BaseException) -> None:
    """One line naming the message, with the traceback: the loop goes on, so this is all the user sees of it."""
    log.error("handler failed for msg_id=%s topic=%s queue=%s offset=%s attempt=%s; it will be redelivered",
              message.msg_id, message.topic, message.queue_id, message.queue_offset, message.delivery_attempt, exc_info=exc)


def log_expired(action: str, results: Sequence[SettleResult]) -> None:
    """Warn when settles came too late: the sign that ``invisible_seconds`` is shorter than the handler needs."""
    expired = [r.receipt_handle for r in results if r.status is SettleStatus.EXPIRED]
    if expired:
        # The handler outlived invisible_seconds: the message may already be
        # with another consumer, so it can be processed twice.
        log.warning("%d %s(s) came too late (receipt handle expired); raise invisible_seconds", len(expired), action)
