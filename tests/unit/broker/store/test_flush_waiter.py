"""FlushWaiter: one fsync request per event-loop pass, every waiter settled by it, timeouts and failures reported.

The API answers FlushTimedOut as FLUSH_DISK_TIMEOUT and StoreNotWritable as STORE_UNAVAILABLE (tests/unit/broker/api/test_problems.py).
"""

from __future__ import annotations

import asyncio
from concurrent.futures import Future
from dataclasses import dataclass, field

import pytest

from halfmq.broker.store.flush_waiter import FlushTimedOut, FlushWaiter
from halfmq.broker.store.message_store import StoreNotWritable
from tests.support.loop_steps import run_ready, until


@dataclass
class Config:
    flush_mode: str = "sync"


@dataclass
class FakeStore:
    """The group-commit side of MessageStore: hands out one future per requested fsync."""

    config: Config = field(default_factory=Config)
    flushed_offset: int = 0
    requests: list[tuple[int, Future[int]]] = field(default_factory=list)

    def wait_flushed(self, offset: int) -> Future[int]:
        fut: Future[int] = Future()
        self.requests.append((offset, fut))
        return fut


async def test_waiters_of_one_loop_pass_share_one_fsync_request_up_to_the_highest_offset() -> None:
    store = FakeStore()
    durable = FlushWaiter(store, timeout=5)  # type: ignore[arg-type]
    waits = [asyncio.ensure_future(durable(offset)) for offset in (300, 100, 200)]
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert [offset for offset, _ in store.requests] == [300]
    assert not any(w.done() for w in waits)

    store.requests[0][1].set_result(300)
    await asyncio.wait_for(asyncio.gather(*waits), 1)


async def test_a_later_pass_asks_for_its_own_fsync() -> None:
    store = FakeStore()
    durable = FlushWaiter(store, timeout=5)  # type: ignore[arg-type]
    first = asyncio.ensure_future(durable(10))
    await until(lambda: store.requests)  # the first pass has asked
    second = asyncio.ensure_future(durable(20))
    await run_ready()
    assert [offset for offset, _ in store.requests] == [10, 20]
    store.requests[1][1].set_result(20)
    await asyncio.wait_for(second, 1)
    assert not first.done()
    store.requests[0][1].set_result(20)
    await asyncio.wait_for(first, 1)


async def test_already_durable_offsets_and_async_mode_do_not_wait() -> None:
    store = FakeStore(flushed_offset=500)
    await asyncio.wait_for(FlushWaiter(store, timeout=5)(400), 1)  # type: ignore[arg-type]
    lazy = FakeStore(config=Config("async"))
    await asyncio.wait_for(FlushWaiter(lazy, timeout=5)(400), 1)  # type: ignore[arg-type]
    assert store.requests == [] and lazy.requests == []


async def test_an_fsync_slower_than_the_timeout_is_a_flush_timeout() -> None:
    store = FakeStore()
    with pytest.raises(FlushTimedOut):
        await FlushWaiter(store, timeout=0.05)(10)  # type: ignore[arg-type]


async def test_a_failed_fsync_fails_every_waiter_of_it() -> None:
    store = FakeStore()
    durable = FlushWaiter(store, timeout=5)  # type: ignore[arg-type]
    waits = [asyncio.ensure_future(durable(o)) for o in (1, 2)]
    await until(lambda: store.requests)
    store.requests[0][1].set_exception(OSError("EIO"))
    results = await asyncio.gather(*waits, return_exceptions=True)
    assert all(isinstance(r, StoreNotWritable) for r in results)


async def test_a_cancelled_request_does_not_cancel_its_neighbours() -> None:
    store = FakeStore()
    durable = FlushWaiter(store, timeout=5)  # type: ignore[arg-type]
    gone, kept = asyncio.ensure_future(durable(1)), asyncio.ensure_future(durable(2))
    await until(lambda: store.requests)
    gone.cancel()
    store.requests[0][1].set_result(2)
    await asyncio.wait_for(kept, 1)
    assert gone.cancelled()
