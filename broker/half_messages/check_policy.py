"""Is a half message due for a check-back? A pure decision, tested with a fake clock."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

MAX_IMMUNITY_SECONDS = 86_400.0  # a local transaction that needs longer than a day is not one
_DECIMAL_SECONDS = re.compile(r"[0-9]{1,9}(\.[0-9]{1,9})?", re.ASCII)


class CheckDecision(str, Enum):
    NOT_DUE = "not_due"
    CHECK = "check"
    DISCARD = "discard"
    NO_PRODUCER = "no_producer"


@dataclass(frozen=True, slots=True)
class CheckPolicy:
    transaction_timeout: float = 6.0
    check_interval: float = 5.0
    check_max: int = 15


def first_check_at(born_at: float, policy: CheckPolicy, immunity: float | None) -> float:
    """A transaction is left alone for its immunity time (CHECK_IMMUNITY_TIME_IN_SECONDS) or the timeout."""
    return born_at + (immunity if immunity is not None and immunity > 0 else policy.transaction_timeout)


def next_check_at(checked_at: float, policy: CheckPolicy) -> float:
    return checked_at + policy.check_interval


def decide(*, now: float, due_at: float, check_times: int, has_producer: bool, policy: CheckPolicy) -> CheckDecision:
    """What the check service does with one pending transaction right now.

    Discarding comes before looking for a producer: a transaction that used up its
    checks is discarded even when no producer is connected. A check that would
    reach nobody is NO_PRODUCER and does not count (RocketMQ counts it: #6737).
    """
    if now < due_at:
        return CheckDecision.NOT_DUE
    if check_times >= policy.check_max:
        return CheckDecision.DISCARD
    if not has_producer:
        return CheckDecision.NO_PRODUCER
    return CheckDecision.CHECK


def immunity_seconds(text: str) -> float:
    """CHECK_IMMUNITY_TIME_IN_SECONDS as seconds: plain decimal digits from 0 to one day, else ValueError.

    Producers set it; the broker schedules by it and renders the next check time,
    so "inf" or "1e400" once made the pending views answer 500. RocketMQ parses a
    whole number; halfmq also takes a decimal fraction (its durations are floats).
    """
    if not _DECIMAL_SECONDS.fullmatch(text) or float(text) > MAX_IMMUNITY_SECONDS:
        raise ValueError(f"a number of seconds from 0 to {MAX_IMMUNITY_SECONDS:.0f} in plain decimal digits, not {text[:40]!r}")
    return float(text)


def parse_immunity(value: str | None) -> float | None:
    """The immunity of a stored half; one the send-time rule would refuse (an older broker took it) is ignored."""
    try:
        return immunity_seconds(value) if value else None
    except ValueError:
        return None
