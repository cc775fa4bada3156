"""DatabaseWriteBatcher (the services' group commit): concurrent submits share batches, each caller gets its own outcome after its batch."""

from __future__ import annotations

import asyncio
import threading

import pytest

from halfmq.client.database_writes import DatabaseWriteBatcher as GroupCommit
from tests.support.loop_steps import run_ready


class Recorder:
    """A batch function that records its batches and can be held until released."""

    def __init__(self) -> None:
        self.batches: list[list[int]] = []
        self.started = threading.Event()  # a batch has begun (and waits for ``release`` if it is clear)
        self.release = threading.Event()
        self.release.set()

    def __call__(self, items: list[int]) -> list[int | Exception]:
        self.started.set()
        self.release.wait(10)
        self.batches.append(list(items))
        return [ValueError(f"odd {i}") if i % 2 else i * 10 for i in items]


async def test_a_lone_submit_runs_at_once_in_a_batch_of_one() -> None:
    write = Recorder()
    assert await GroupCommit(write).submit(4) == 40
    assert write.batches == [[4]]


async def test_submits_during_a_batch_form_the_next_batch() -> None:
    write = Recorder()
    write.release.clear()
    group = GroupCommit(write)
    first = asyncio.ensure_future(group.submit(0))
    assert await asyncio.to_thread(write.started.wait, 10)  # the first batch is now running (held)
    rest = [asyncio.ensure_future(group.submit(i)) for i in (2, 4, 6)]
    await run_ready()  # submitted
    write.release.set()
    assert await first == 0 and await asyncio.gather(*rest) == [20, 40, 60]
    assert write.batches == [[0], [2, 4, 6]]


async def test_each_caller_gets_its_own_error_and_the_rest_succeed() -> None:
    group = GroupCommit(Recorder())
    results = await asyncio.gather(*(group.submit(i) for i in range(4)), return_exceptions=True)
    assert results[0] == 0 and results[2] == 20
    assert [str(r) for r in (results[1], results[3])] == ["odd 1", "odd 3"]


async def test_batches_are_capped_at_max_batch() -> None:
    write = Recorder()
    group = GroupCommit(write, max_batch=3)
    assert await asyncio.gather(*(group.submit(i * 2) for i in range(7))) == [i * 20 for i in range(7)]
    assert [len(b) for b in write.batches] == [3, 3, 1]


async def test_a_failing_batch_function_fails_every_caller_of_that_batch_only() -> None:
    calls = []

    def write(items: list[int]) -> list[int]:
        calls.append(items)
        if len(calls) == 1:
            raise OSError("disk on fire")
        return items

    group = GroupCommit(write)
    with pytest.raises(OSError):
        await group.submit(1)
    assert await group.submit(2) == 2


def test_max_batch_must_be_positive() -> None:
    with pytest.raises(ValueError):
        GroupCommit(Recorder(), max_batch=0)
