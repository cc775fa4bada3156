"""Waiting for durability from the event loop: group commit per event-loop pass.

The group-commit thread (flush_service) fsyncs for whoever asks; this is the
asking side, so that the requests of one loop pass share one fsync.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import Future

from .message_store import MessageStore, StoreNotWritable


class FlushTimedOut(Exception):
    """The fsync covering a write did not finish within the sync flush timeout; the write may still become durable."""


class FlushWaiter:
    """Awaitable "is ``offset`` on disk yet" for sync flush: FlushTimedOut past ``timeout``.

    Requests do not ask the group-commit thread for an fsync one by one: the
    waiters of one event-loop pass are collected and a single ``_kick``, run
    after every request ready in that pass, asks for one fsync covering them all.
    Asking per request let the fsync thread start as soon as the first request
    of a burst arrived, so under 64 requests in flight an fsync covered ~2.6 of
    them and the event loop was woken ~2,000 times a second to settle them.
    Each request gets a plain asyncio future, so a cancelled request never
    cancels its neighbours' wait.
    """

    def __init__(self, store: MessageStore, timeout: float) -> None:
        self._store = store
        self._timeout = timeout
        self._batch: list[asyncio.Future[None]] = []
        self._batch_end = 0
        self._kick_scheduled = False

    async def __call__(self, end_offset: int) -> None:
        if self._store.config.flush_mode == "async" or end_offset <= self._store.flushed_offset:
            return
        loop = asyncio.get_running_loop()
        waiter = loop.create_future()
        self._batch.append(waiter)
        self._batch_end = max(self._batch_end, end_offset)
        if not self._kick_scheduled:
            self._kick_scheduled = True
            loop.call_soon(self._kick, loop)
        await waiter

    def _kick(self, loop: asyncio.AbstractEventLoop) -> None:
        waiters, self._batch = self._batch, []
        end, self._batch_end = self._batch_end, 0
        self._kick_scheduled = False
        try:
            cf: Future[int] | None = self._store.wait_flushed(end)
        except Exception as exc:  # noqa: BLE001 - a closed store: every waiter hears of it
            self._settle(waiters, exc, None)
            return
        if cf is None or cf.done() and cf.exception() is None:
            self._settle(waiters, None, None)
            return
        timer = loop.call_later(self._timeout, self._settle, waiters,
                                FlushTimedOut(f"fsync did not complete within {self._timeout}s"), None)
        cf.add_done_callback(lambda f: loop.call_soon_threadsafe(self._settle, waiters, self._error(f), timer))

    @staticmethod
    def _error(done: Future[int]) -> Exception | None:
        exc = done.exception()
        return None if exc is None else StoreNotWritable(f"fsync failed: {exc}")

    @staticmethod
    def _settle(waiters: list[asyncio.Future[None]], error: Exception | None, timer: asyncio.TimerHandle | None) -> None:
        if timer is not None:
            timer.cancel()
        for waiter in waiters:
            if waiter.done():
                continue
            if error is None:
                waiter.set_result(None)
            else:
                waiter.set_exception(error)
