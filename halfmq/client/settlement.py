"""What the consumer loop does with each message of a batch once its handler is done.

One ack request for the successes, one nack request for the failures and for
messages that were received but never handed to the handler (released on stop);
a failure's nack carries why (``failure_reason``: the exception's class and
message), so failures with different reasons take one nack request each.
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

__all__ = ["MAX_HANDLER_REASON", "Outcome", "Settle", "failure_reason", "log_expired", "log_handler_failure", "settle_batch"]

log = logging.getLogger("halfmq.client.consumer")

MAX_HANDLER_REASON = 200  # characters of a failed handler's exception sent as its nack's reason


class Outcome(Enum):
    """What became of one message of a batch, which decides how it is settled."""

    ACK = "ack"
    NACK = "nack"
    # Received but never started because the consumer is stopping: give it
    # back now rather than leave it invisible until its timer runs out.
    RELEASE = "release"


@dataclass(frozen=True, slots=True)
class Settle:
    """Ack or nack these receipt handles (a nack with its ``reason``, if any) and send back the broker's results."""

    action: Literal["ack", "nack"]
    handles: list[str]
    reason: str | None = None


def failure_reason(exc: BaseException) -> str:
    """A failed handler's nack reason, as the message's journey shows it: ``ValueError: db down``, one line, at most
    ``MAX_HANDLER_REASON`` characters."""
    text = " ".join(str(exc).split())
    reason = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return reason if len(reason) <= MAX_HANDLER_REASON else reason[: MAX_HANDLER_REASON - 1] + "…"


def settle_batch(batch: Sequence[Message], outcomes: Sequence[Outcome],
                 reasons: Sequence[str | None] | None = None) -> Generator[Settle, list[SettleResult], None]:
    """The ack, then the nacks, of a batch: one nack per distinct ``reasons`` entry of the ``NACK`` outcomes (a
    release has none), in batch order; a failed one is logged, not raised (its messages come back on their own)."""
    whys: Sequence[str | None] = [None] * len(batch) if reasons is None else reasons
    handled = [(m.receipt_handle, o, r) for m, o, r in zip(batch, outcomes, whys, strict=True) if m.receipt_handle is not None]
    acks = [h for h, o, _ in handled if o is Outcome.ACK]
    nacks: dict[str | None, list[str]] = {}  # by reason, in batch order
    for h, o, r in handled:
        if o is not Outcome.ACK:
            nacks.setdefault(r if o is Outcome.NACK else None, []).append(h)
    for settle in (Settle("ack", acks), *(Settle("nack", handles, reason) for reason, handles in nacks.items())):
        if not settle.handles:
            continue
        try:
            log_expired(settle.action, (yield settle))
        except BrokerError as exc:
            # Unsettled messages come back after invisible_seconds.
            log.warning("%s of %d message(s) failed: %s", settle.action, len(settle.handles), exc)


def log_handler_failure(message: Message, exc: BaseException) -> None:
    """One line per failed attempt, naming the message and why; the traceback only with a message's first attempt
    (and at DEBUG with every one): a handler failing on every attempt must not flood the log with the same one."""
    first = (message.delivery_attempt or 1) <= 1
    log.error("handler failed for msg_id=%s topic=%s queue=%s offset=%s attempt=%s (%s); it will be redelivered",
              message.msg_id, message.topic, message.queue_id, message.queue_offset, message.delivery_attempt,
              failure_reason(exc), exc_info=exc if first else None)
    if not first and log.isEnabledFor(logging.DEBUG):
        log.debug("traceback of msg_id=%s attempt=%s", message.msg_id, message.delivery_attempt, exc_info=exc)


def log_expired(action: str, results: Sequence[SettleResult]) -> None:
    """Warn when settles came too late: the sign that ``invisible_seconds`` is shorter than the handler needs."""
    expired = [r.receipt_handle for r in results if r.status is SettleStatus.EXPIRED]
    if expired:
        # The handler outlived invisible_seconds: the message may already be
        # with another consumer, so it can be processed twice.
        log.warning("%d %s(s) came too late (receipt handle expired); raise invisible_seconds", len(expired), action)
