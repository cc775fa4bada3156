"""When the SDK tries again, and how long it waits.

Only errors that say ``retriable`` (the broker unreachable, a flush that timed
out, a store not taking writes) are retried: anything else would fail the same
way again. Sends stay safe to retry because every message carries a UNIQ_KEY
the broker and consumers can recognise.

The loop is ours rather than tenacity's: it is a dozen lines, it keeps
tenacity's frames out of every traceback a user reads, and the last error can
say how many attempts it took (docs/decisions/020-sdk-footprint.md).
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from typing import ParamSpec, TypeVar

from halfmq.errors import BrokerError

__all__ = ["async_retrying", "backoff_delay", "is_retriable"]

log = logging.getLogger(__name__)

P = ParamSpec("P")
T = TypeVar("T")


def is_retriable(exc: BaseException) -> bool:
    """The broker's own word (``retriable`` on the error), never a guess from the exception's type."""
    return isinstance(exc, BrokerError) and exc.retriable


RetryPredicate = Callable[[BaseException], bool]


def backoff_delay(failures: int, *, initial: float = 0.1, cap: float = 5.0) -> float:
    """Capped exponential delay with jitter, for loops that must keep going.

    Jitter keeps a fleet of consumers from hammering a recovering broker in step.
    """
    base = min(cap, initial * 2.0 ** max(0, failures - 1))
    return base * random.uniform(0.5, 1.0)


def _given_up(exc: BrokerError, attempts: int) -> BrokerError:
    """``exc`` as the caller sees it: saying how often it was tried, its traceback starting at the caller."""
    if attempts > 1:
        exc.detail = f"{exc.detail} after {attempts} attempts"
        exc.args = (exc.detail,)
    return exc.with_traceback(None)


class AsyncRetrying:
    """The loop for coroutines: it waits with ``asyncio.sleep``, so other sends go on meanwhile."""

    def __init__(self, retries: int, retry_on: RetryPredicate) -> None:
        if retries < 0:
            raise ValueError("retries must be >= 0")
        self.attempts = retries + 1
        self.retry_on = retry_on

    async def __call__(self, fn: Callable[P, Awaitable[T]], *args: P.args, **kwargs: P.kwargs) -> T:
        attempt = 0
        while True:
            attempt += 1
            try:
                return await fn(*args, **kwargs)
            except Exception as exc:
                if attempt >= self.attempts or not self.retry_on(exc):
                    if isinstance(exc, BrokerError):
                        raise _given_up(exc, attempt) from None
                    raise
                delay = backoff_delay(attempt, initial=0.1, cap=2.0)
                log.warning("attempt %d of %d failed (%s); retrying in %.2fs", attempt, self.attempts, exc, delay)
            await asyncio.sleep(delay)


# A fresh policy per call is cheap and keeps the call sites as they were.
# ``retry_on`` narrows what is retried for requests that are not safe to
# repeat (see ``transport.request_not_sent``).
def async_retrying(retries: int, retry_on: RetryPredicate = is_retriable) -> AsyncRetrying:
    """A policy of ``retries`` attempts after the first, for errors ``retry_on`` accepts (a ValueError below 0)."""
    return AsyncRetrying(retries, retry_on)
