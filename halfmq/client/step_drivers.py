"""Run a step sequence (``half_message_steps``, ``settlement``) from a coroutine or from a thread: one driver.

The asyncio clients await each step (``run_steps_async``). The blocking transaction producer
must run its listener's local transaction in its caller's thread (where the caller's database
session lives) while its requests run on the SDK's loop, so it walks the sequence from that
thread (``run_steps``): the same driver with a ``perform`` that blocks (it returns its result, not
an awaitable), so the walk never suspends and one ``send`` runs it to the end. A driver only
performs steps: it sends each step's result back into the sequence, or throws in the
``Exception`` the step raised, and the sequence decides what that means. A ``BaseException`` (a crash, cancellation) is never thrown in: it
leaves the sequence where it stopped, so no later step runs.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Generator
from typing import Any, TypeVar

from .half_message_steps import Request
from .retry import RetryPredicate, is_retriable
from .transport import request_not_sent

__all__ = ["retry_on", "run_steps", "run_steps_async"]

S = TypeVar("S")
T = TypeVar("T")


def retry_on(request: Request) -> RetryPredicate:
    """Which failures of ``request`` may be retried: any retriable one only if repeating it is harmless."""
    return is_retriable if request.idempotent else request_not_sent


async def run_steps_async(steps: Generator[S, Any, T], perform: Callable[[S], Awaitable[Any] | Any]) -> T:
    """Walk ``steps``, doing each with ``perform`` (awaited if it returns an awaitable); the sequence's result."""
    reply: Any = None
    error: Exception | None = None
    while True:
        try:
            step = steps.send(reply) if error is None else steps.throw(error)
        except StopIteration as done:
            result: T = done.value
            return result
        reply, error = None, None
        try:
            reply = perform(step)
            if inspect.isawaitable(reply):
                reply = await reply
        except Exception as exc:  # noqa: BLE001 - the sequence decides what a failed step means
            error = exc


def run_steps(steps: Generator[S, Any, T], perform: Callable[[S], Any]) -> T:
    """``run_steps_async`` walked in this thread with a blocking ``perform``: nothing suspends, so one ``send`` ends it."""
    try:
        run_steps_async(steps, perform).send(None)
    except StopIteration as done:
        result: T = done.value
        return result
    raise AssertionError("a blocking perform never suspends the walk")
