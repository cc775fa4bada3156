"""Group commit: the writes that arrive while one database transaction runs share the next one.

Why: SQLite has one writer, and in a busy asyncio service every write transaction is
expensive beyond its fsync. Each SQLite call drops the GIL, and a worker thread that
dropped it waits up to the interpreter's switch interval (5 ms) to get it back from the
event loop, so a BEGIN / INSERT / INSERT / COMMIT transaction held the write lock for
several milliseconds and capped a service near 200 writes/s. One transaction per batch
pays those costs once per batch. Nothing waits for a batch to fill: a write that arrives
alone runs at once; writes that arrive during a transaction form the next one.

The batch function runs in a worker thread and returns one outcome per item, in order:
the item's result, or the exception that item's caller gets. It decides how a failure is
shared (``services.database.together_or_each_alone``: a batch that cannot commit as a
whole is redone item by item, so one item's conflict fails that item only). A caller's
result is set only after its batch's transaction has ended.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from .coalescer import deliver

__all__ = ["GroupCommit"]

T = TypeVar("T")
R = TypeVar("R")

BatchWrite = Callable[[list[T]], Sequence["R | Exception"]]


class GroupCommit(Generic[T, R]):
    """Run ``write_batch`` over the items submitted concurrently, one batch at a time.

    Lives on one event loop (the first that submits); ``submit`` is not thread-safe.
    """

    def __init__(self, write_batch: BatchWrite[T, R], max_batch: int = 64) -> None:
        if max_batch < 1:
            raise ValueError("max_batch must be at least 1")
        self._write_batch = write_batch
        self._max_batch = max_batch
        self._pending: list[tuple[T, asyncio.Future[R]]] = []
        self._drainer: asyncio.Task[None] | None = None

    async def submit(self, item: T) -> R:
        """Write ``item`` in the next batch; its result, or its exception raised here."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[R] = loop.create_future()
        self._pending.append((item, future))
        if self._drainer is None:
            self._drainer = loop.create_task(self._drain(), name="group-commit")
        return await future

    async def _drain(self) -> None:
        try:
            while self._pending:
                batch, self._pending = self._pending[: self._max_batch], self._pending[self._max_batch :]
                await self._run(batch)
        finally:
            self._drainer = None
            # Only on cancellation (loop shutdown) is anything left: those writes never started.
            for _, future in self._pending:
                future.cancel()
            self._pending = []

    async def _run(self, batch: list[tuple[T, asyncio.Future[R]]]) -> None:
        try:
            outcomes = await asyncio.to_thread(self._write_batch, [item for item, _ in batch])
            if len(outcomes) != len(batch):
                raise RuntimeError(f"write_batch returned {len(outcomes)} outcomes for {len(batch)} items")
        except asyncio.CancelledError:
            # The thread may still commit: the callers must not take it as a rollback.
            for _, future in batch:
                future.cancel()
            raise
        except Exception as exc:  # noqa: BLE001 - the batch function itself failed: nothing of it is reported committed
            outcomes = [exc] * len(batch)
        deliver([future for _, future in batch], outcomes)
