"""When the SDK tries again, and how long it waits.

Only errors that say ``retriable`` (the broker unreachable, a flush that timed
out, a store not taking writes) are retried: anything else would fail the same
way again. Sends stay safe to retry because every message carries a UNIQ_KEY
the broker and consumers can recognise.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable

from tenacity import (
    AsyncRetrying,
    Retrying,
    before_sleep_log,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential,
    wait_random,
)

from halfmq.broker.errors import BrokerError

__all__ = ["async_retrying", "backoff_delay", "is_retriable", "retrying"]

log = logging.getLogger(__name__)


def is_retriable(exc: BaseException) -> bool:
    return isinstance(exc, BrokerError) and exc.retriable


RetryPredicate = Callable[[BaseException], bool]


def _policy(retries: int, retry_on: RetryPredicate) -> dict[str, object]:
    if retries < 0:
        raise ValueError("retries must be >= 0")
    return {
        "stop": stop_after_attempt(retries + 1),
        "wait": wait_exponential(multiplier=0.1, max=2.0) + wait_random(0, 0.1),
        "retry": retry_if_exception(retry_on),
        "before_sleep": before_sleep_log(log, logging.WARNING),
        "reraise": True,
    }


# A fresh controller per call: tenacity keeps per-attempt state on the object
# (thread-local, so shared between coroutines of one loop), which concurrent
# calls would otherwise trample. ``retry_on`` narrows what is retried for
# requests that are not safe to repeat (see ``transport.request_not_sent``).
def retrying(retries: int, retry_on: RetryPredicate = is_retriable) -> Retrying:
    return Retrying(**_policy(retries, retry_on))  # type: ignore[arg-type]


def async_retrying(retries: int, retry_on: RetryPredicate = is_retriable) -> AsyncRetrying:
    return AsyncRetrying(**_policy(retries, retry_on))  # type: ignore[arg-type]


def backoff_delay(failures: int, *, initial: float = 0.1, cap: float = 5.0) -> float:
    """Capped exponential delay with jitter, for loops that must keep going.

    Jitter keeps a fleet of consumers from hammering a recovering broker in step.
    """
    base = min(cap, initial * 2.0 ** max(0, failures - 1))
    return base * random.uniform(0.5, 1.0)
