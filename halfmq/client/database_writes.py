"""Database writes in shared transactions: the writes that arrive while one transaction runs share the next one.

Why: SQLite has one writer, and in a busy asyncio service every write transaction is
expensive beyond its fsync. Each SQLite call drops the GIL, and a worker thread that
dropped it waits up to the interpreter's switch interval (5 ms) to get it back from the
event loop, so a BEGIN / INSERT / INSERT / COMMIT transaction held the write lock for
several milliseconds and capped a service near 200 writes/s. One transaction per batch
pays those costs once per batch. Nothing waits for a batch to fill: a write that arrives
alone runs at once; writes that arrive during a transaction form the next one.

This is not a second batching engine: it is the SDK's one engine (``batching``) with one
key, one batch in flight (a database has one writer: two transactions at once would only
queue on its lock) and a blocking batch function run in a worker thread. It keeps its own
name because what it batches is database transactions, not broker requests: the
transaction barrier (``sqlalchemy.barrier``) and the services' handlers use it.

The batch function returns one outcome per item, in order: the item's result, or the
exception that item's caller gets. It decides how a failure is shared
(``services.database.together_or_each_alone``: a batch that cannot commit as a whole is
redone item by item, so one item's conflict fails that item only). A caller's result is
set only after its batch's transaction has ended; a caller cancelled before its batch
started is left out of it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from .batching import PassCoalescer, UpTo

__all__ = ["DatabaseWriteBatcher"]

T = TypeVar("T")
R = TypeVar("R")

BatchWrite = Callable[[list[T]], Sequence["R | Exception"]]


class DatabaseWriteBatcher(Generic[T, R]):
    """Run ``write_batch`` (one database transaction) over the items submitted concurrently, one batch at a time.

    Lives on one event loop at a time (the one that submits); ``submit`` is not thread-safe.
    """

    def __init__(self, write_batch: BatchWrite[T, R], max_batch: int = 64) -> None:
        # If a batch is cancelled (loop shutdown) its thread may still commit: the engine cancels the
        # callers' futures rather than report a rollback.
        self._engine: PassCoalescer[None, T, R] = PassCoalescer(lambda _key, items: asyncio.to_thread(write_batch, items),
                                                                UpTo(max_batch, max_in_flight=1))

    async def submit(self, item: T) -> R:
        """Write ``item`` in the next batch; its result, or its exception raised here."""
        return await self._engine.submit(None, item)
