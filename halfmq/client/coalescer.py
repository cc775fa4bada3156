"""Coalescing: the items submitted in one event-loop pass go out together, as one batch.

Why: 64 concurrent callers each paying one HTTP request (and one fsync wait)
spend most of their time in per-request work; the same callers in one request
pay it once. Nothing waits for a batch to fill, and there is no timer: the
first item of a pass schedules the batch for the loop's next pass
(``call_soon``), so a lone call goes out at once and the callers that run in the
same pass (64 tasks woken by one answer, say) join it. At most ``max_in_flight``
batches are in flight; the items that arrive while that many are out wait for
one of them to return and then leave together. Without that bound, callers that
once fell out of step (an asyncio.Lock wakes its waiters one per pass) stayed
out of step, and 64 callers sent 32 batches of two.

The batch function returns one outcome per item, in order: the item's result,
or the exception that item's caller gets. A failure of the batch as a whole
(the request never answered) is every item's exception.

The transaction producer uses it (``transaction_batches``); it is written to
know nothing of what an item is, so another producer may share it.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

__all__ = ["Coalescer", "deliver"]

T = TypeVar("T")
R = TypeVar("R")

SendBatch = Callable[[list[T]], Awaitable[Sequence["R | Exception"]]]


def _own_copy(exc: Exception) -> Exception:
    """A copy per caller: a retry policy rewrites the error it gives up with, which must not show in the others'."""
    try:
        return copy.copy(exc)
    except Exception:  # noqa: BLE001 - an exception that cannot be copied is shared as it is
        return exc



def deliver(futures: Sequence[asyncio.Future[R]], outcomes: Sequence[R | Exception]) -> None:
    """Each waiting caller gets its own outcome: an exception is raised in it, anything else is its result."""
    for future, outcome in zip(futures, outcomes, strict=True):
        if future.done():  # the caller was cancelled meanwhile
            continue
        if isinstance(outcome, Exception):
            future.set_exception(outcome)
        else:
            future.set_result(outcome)

class Coalescer(Generic[T, R]):
    """Items submitted in one loop pass become batches of at most ``max_batch``; each caller gets its own outcome.

    Lives on one event loop (the first that submits); ``submit`` is not thread-safe.
    """

    def __init__(self, send_batch: SendBatch[T, R], max_batch: int, max_in_flight: int = 2) -> None:
        if max_batch < 1 or max_in_flight < 1:
            raise ValueError("max_batch and max_in_flight must be at least 1")
        self._send_batch = send_batch
        self._max_batch = max_batch
        self._max_in_flight = max_in_flight
        self._pending: list[tuple[T, asyncio.Future[R]]] = []
        self._scheduled = False
        self._in_flight: set[asyncio.Task[None]] = set()

    async def submit(self, item: T) -> R:
        """Send ``item`` in this pass's batch; its result, or its exception raised here."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[R] = loop.create_future()
        self._pending.append((item, future))
        self._schedule(loop)
        return await future

    def _schedule(self, loop: asyncio.AbstractEventLoop) -> None:
        if not self._scheduled and self._pending and len(self._in_flight) < self._max_in_flight:
            self._scheduled = True
            loop.call_soon(self._flush, loop)

    def _flush(self, loop: asyncio.AbstractEventLoop) -> None:
        self._scheduled = False
        while self._pending and len(self._in_flight) < self._max_in_flight:
            batch, self._pending = self._pending[:self._max_batch], self._pending[self._max_batch:]
            task = loop.create_task(self._run(batch), name="halfmq-coalesced-batch")
            self._in_flight.add(task)
            task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._in_flight.discard(task)
        self._schedule(task.get_loop())

    async def _run(self, batch: list[tuple[T, asyncio.Future[R]]]) -> None:
        live = [(item, future) for item, future in batch if not future.done()]  # a caller cancelled before it left
        if not live:
            return
        try:
            outcomes: Sequence[R | Exception] = await self._send_batch([item for item, _ in live])
            if len(outcomes) != len(live):
                raise RuntimeError(f"the batch answered {len(outcomes)} outcomes for {len(live)} items")
        except asyncio.CancelledError:
            for _, future in live:
                future.cancel()
            raise
        except Exception as exc:  # noqa: BLE001 - the batch as a whole failed: that is each item's outcome
            outcomes = [_own_copy(exc) for _ in live]
        deliver([future for _, future in live], outcomes)

    async def aclose(self) -> None:
        """Wait for the batches in flight (their callers are waiting for them too)."""
        if self._in_flight:
            await asyncio.gather(*self._in_flight, return_exceptions=True)
