"""The SDK's one batching engine: per key, the items submitted in one event-loop pass go out together.

Why: 64 concurrent callers each paying one HTTP request (and one fsync wait) spend most
of their time in per-request work; the same callers in one request pay it once. Nothing
waits for a batch to fill, and there is no timer: the first item of a pass schedules its
key's batch for the loop's next pass (``call_soon``), so a lone call goes out at once and
the callers that run in the same pass (64 tasks woken by one answer, say) join it. At most
``policy.max_in_flight`` batches of a key are in flight; the items that arrive meanwhile
wait for one to return and then leave together. Without that bound, callers that once
fell out of step (an asyncio.Lock wakes its waiters one per pass) stayed out of step.

What varies is data, not a second engine:

* the **take policy** (``TakePolicy``): how many of a key's waiting items the next batch
  carries (``UpTo`` a count; plain sends also bound bytes and share a burst among the
  requests that may start: ``send_policy.Limits``) and how many batches may be out;
* ``send_one``: a batch of one goes this way (plain sends use the single-message route);
* ``split``: a failed batch of several whose error ``split`` says may concern one item
  is redone item by item through ``send_one``, so each caller gets the answer it would
  have had alone (a refused send batch stored nothing).

The batch function returns one outcome per item, in order: the item's result, or the
exception that item's caller gets. A failure of the batch as a whole is every caller's
exception, each its own copy (``own_copy``). A caller cancelled before its batch left is
dropped (its item is never sent); a caller cancelled later does not cancel the others.

Users: plain sends (``AsyncProducer``, and the blocking ``Producer``, whose threads meet on
the SDK's one event loop, ``loop_thread``), the transaction producer's halves and ends
(``transaction_batches``), and the database writes of the barrier and the services
(``database_writes``).
"""

from __future__ import annotations

import asyncio
import copy
from collections import deque
from collections.abc import Awaitable, Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

__all__ = ["PassCoalescer", "TakePolicy", "UpTo", "deliver", "own_copy"]

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")
R = TypeVar("R")
T_contra = TypeVar("T_contra", contravariant=True)
E = TypeVar("E", bound=BaseException)

SendBatch = Callable[[K, list[T]], Awaitable[Sequence["R | Exception"]]]
SendOne = Callable[[K, T], Awaitable[R]]
Split = Callable[[Exception], bool]


class TakePolicy(Protocol[T_contra]):
    """How a key's waiting items are cut into batches."""

    @property
    def max_in_flight(self) -> int:
        """Batches of one key out at once."""
        ...

    def take(self, waiting: Sequence[T_contra], in_flight: int) -> int:
        """How many of ``waiting`` (oldest first, never empty) the next batch carries, with ``in_flight`` out: at least 1."""
        ...


@dataclass(frozen=True)
class UpTo:
    """Up to ``max_batch`` items per batch, ``max_in_flight`` batches out per key."""

    max_batch: int
    max_in_flight: int = 2

    def __post_init__(self) -> None:
        if self.max_batch < 1 or self.max_in_flight < 1:
            raise ValueError("max_batch and max_in_flight must be at least 1")

    def take(self, waiting: Sequence[object], in_flight: int) -> int:
        """Everything waiting, up to ``max_batch``: items of equal cost need no finer rule."""
        return min(len(waiting), self.max_batch)


def own_copy(error: E) -> E:
    """A copy of ``error`` for one caller, its traceback starting where that caller raises it.

    Each caller must have its own: a retry policy rewrites the error it gives up with
    (``retry._given_up``), which must not show in the others', and raising one instance in
    many tasks would chain their tracebacks. ``copy.copy`` keeps the error's attributes
    (``sent``, ``status``, ``detail``) and drops ``__traceback__``; the traceback is cleared
    explicitly all the same, as ``retry`` does, so the rule reads here. An error that
    cannot be copied is shared as it is.
    """
    try:
        mine = copy.copy(error)
    except Exception:  # noqa: BLE001 - an exception type that cannot be copied: share the instance
        return error
    return mine.with_traceback(None)


def deliver(futures: Sequence[asyncio.Future[R]], outcomes: Sequence[R | BaseException]) -> None:
    """Each waiting caller gets its own outcome: an exception is raised in it, anything else is its result."""
    for future, outcome in zip(futures, outcomes, strict=True):
        if future.done():  # the caller was cancelled meanwhile
            continue
        if isinstance(outcome, BaseException):
            future.set_exception(outcome)
        else:
            future.set_result(outcome)


@dataclass(slots=True)
class _Pending(Generic[T, R]):
    item: T
    waiter: asyncio.Future[R]


@dataclass(slots=True)
class _Key(Generic[T, R]):
    pending: deque[_Pending[T, R]] = field(default_factory=deque)
    in_flight: int = 0
    scheduled: bool = False


class PassCoalescer(Generic[K, T, R]):
    """Items submitted per key in one loop pass go out through ``send_batch`` as batches cut by ``policy``.

    Lives on one event loop at a time (the one that submits; a new loop starts afresh); ``submit`` is not
    thread-safe: blocking callers reach it through the SDK's loop thread (``loop_thread``).
    """

    def __init__(self, send_batch: SendBatch[K, T, R], policy: TakePolicy[T], *, send_one: SendOne[K, T, R] | None = None, split: Split | None = None) -> None:
        """``send_one``: a batch of one goes this way; ``split``: which errors of a batch send its members alone."""
        if split is not None and send_one is None:
            raise ValueError("split needs send_one: the members of a split batch go alone")
        self._policy = policy
        self._split = split
        self._send_batch, self._send_one = send_batch, send_one
        self._keys: dict[K, _Key[T, R]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None

    async def submit(self, key: K, item: T) -> R:
        """``item``'s outcome from the next batch of ``key``: its result, or its exception raised here."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # a new loop (asyncio.run again): the old one's state died with it
            self._loop, self._keys, self._tasks = loop, {}, set()
        future: asyncio.Future[R] = loop.create_future()
        state = self._keys.get(key)
        if state is None:
            state = self._keys[key] = _Key()
        state.pending.append(_Pending(item, future))
        self._schedule(key, state)
        return await future

    def _schedule(self, key: K, state: _Key[T, R]) -> None:
        if not state.scheduled and state.pending and state.in_flight < self._policy.max_in_flight:
            state.scheduled = True
            assert self._loop is not None
            # The next loop pass, not now: the other items of this pass join the same batch.
            self._loop.call_soon(self._start, key, state)

    def _start(self, key: K, state: _Key[T, R]) -> None:
        state.scheduled = False
        while (batch := self._take(state)) is not None:
            assert self._loop is not None
            task = self._loop.create_task(self._run(key, state, batch), name="halfmq-batch")
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def _take(self, state: _Key[T, R]) -> list[_Pending[T, R]] | None:
        """The next batch of ``state``'s key, taken off its pending items, if one may start now (in flight + 1)."""
        if state.in_flight >= self._policy.max_in_flight:
            return None
        # A caller cancelled before its batch left is dropped: its item is never sent.
        waiting = [p for p in state.pending if not p.waiter.done()]
        if not waiting:
            state.pending.clear()
            return None
        count = max(1, self._policy.take([p.item for p in waiting], state.in_flight))
        batch, state.pending = waiting[:count], deque(waiting[count:])
        state.in_flight += 1
        return batch

    async def _run(self, key: K, state: _Key[T, R], batch: list[_Pending[T, R]]) -> None:
        try:
            await self._answer(key, [p for p in batch if not p.waiter.done()])
        except Exception as exc:  # noqa: BLE001 - a fault of ours must not leave a caller waiting for ever
            deliver([p.waiter for p in batch], [own_copy(exc) for _ in batch])
        finally:
            state.in_flight -= 1
            self._schedule(key, state)

    async def _answer(self, key: K, batch: list[_Pending[T, R]]) -> None:
        """Send ``batch`` and hand each caller its outcome: the batch's, or (``split``) its own, sent alone."""
        if not batch:  # every caller was cancelled meanwhile
            return
        outcomes: Sequence[R | Exception] | None = None
        error: Exception | None = None
        try:
            if self._send_one is not None and len(batch) == 1:
                outcomes = [await self._send_one(key, batch[0].item)]
            else:
                outcomes = await self._send_batch(key, [p.item for p in batch])
        except asyncio.CancelledError:
            for p in batch:
                p.waiter.cancel()
            raise
        except Exception as exc:  # noqa: BLE001 - every caller gets the outcome it would have had alone
            error = exc
        if error is None and outcomes is not None and len(outcomes) != len(batch):
            # Outcomes match items by position: a short answer would hand one caller another's outcome.
            error = ValueError(f"the batch answered {len(outcomes)} outcomes for {len(batch)} items")
        if error is not None and len(batch) > 1 and self._split is not None and self._split(error):
            # A split batch: each member is sent on its own (unless its caller is gone meanwhile).
            await asyncio.gather(*(self._answer(key, [p]) for p in batch if not p.waiter.done()))
            return
        delivered: Sequence[R | BaseException] = [own_copy(error) for _ in batch] if error is not None else outcomes or []
        deliver([p.waiter for p in batch], delivered)

    async def drain(self) -> None:
        """Wait until every item accepted so far has its outcome (a producer's ``close``)."""
        if self._loop is not asyncio.get_running_loop():
            return  # items of another (finished) loop: nothing of them can still run
        while True:
            if self._tasks:
                await asyncio.wait(list(self._tasks))
            elif any(state.scheduled or state.pending for state in self._keys.values()):
                await asyncio.sleep(0)  # a scheduled start runs and makes a task
            else:
                return
