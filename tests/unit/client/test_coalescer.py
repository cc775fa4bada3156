"""The coalescer: one event-loop pass, one batch; each caller its own outcome; no timer."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from halfmq.client.coalescer import Coalescer
from halfmq.errors import BrokerUnavailable


class Recorder:
    def __init__(self, fail: Exception | None = None) -> None:
        self.batches: list[list[int]] = []
        self.fail = fail

    async def send(self, items: list[int]) -> Sequence[int | Exception]:
        self.batches.append(items)
        await asyncio.sleep(0)
        if self.fail is not None:
            raise self.fail
        return [ValueError(f"odd {i}") if i % 2 else i * 10 for i in items]


async def test_the_calls_of_one_pass_go_out_as_one_batch_and_each_gets_its_own_outcome() -> None:
    recorder = Recorder()
    coalescer: Coalescer[int, int] = Coalescer(recorder.send, max_batch=100)
    outcomes = await asyncio.gather(*(coalescer.submit(i) for i in range(6)), return_exceptions=True)
    assert recorder.batches == [[0, 1, 2, 3, 4, 5]]
    assert [o if isinstance(o, int) else str(o) for o in outcomes] == [0, "odd 1", 20, "odd 3", 40, "odd 5"]


async def test_a_lone_call_goes_out_on_the_next_pass_without_a_timer() -> None:
    recorder = Recorder()
    coalescer: Coalescer[int, int] = Coalescer(recorder.send, max_batch=100)
    assert await asyncio.wait_for(coalescer.submit(2), timeout=0.05) == 20
    assert recorder.batches == [[2]]


async def test_a_pass_larger_than_max_batch_is_split() -> None:
    recorder = Recorder()
    coalescer: Coalescer[int, int] = Coalescer(recorder.send, max_batch=4)
    await asyncio.gather(*(coalescer.submit(i * 2) for i in range(10)))
    assert [len(b) for b in recorder.batches] == [4, 4, 2]


async def test_a_failed_batch_fails_each_caller_with_its_own_copy_of_the_error() -> None:
    recorder = Recorder(fail=BrokerUnavailable("down", sent=False))
    coalescer: Coalescer[int, int] = Coalescer(recorder.send, max_batch=100)
    outcomes = await asyncio.gather(*(coalescer.submit(i) for i in range(3)), return_exceptions=True)
    assert all(isinstance(o, BrokerUnavailable) and o.sent is False for o in outcomes)
    assert len({id(o) for o in outcomes}) == 3, "a retry policy rewrites the error it gives up with"


async def test_a_caller_cancelled_before_its_batch_left_is_not_sent_and_the_others_are() -> None:
    recorder = Recorder()
    coalescer: Coalescer[int, int] = Coalescer(recorder.send, max_batch=100)
    doomed = asyncio.ensure_future(coalescer.submit(4))
    kept = asyncio.ensure_future(coalescer.submit(6))
    await asyncio.sleep(0)  # both submitted; the batch leaves on the next pass
    doomed.cancel()
    assert await kept == 60
    assert recorder.batches == [[6]]


def test_max_batch_must_be_positive() -> None:
    with pytest.raises(ValueError):
        Coalescer(Recorder().send, max_batch=0)


async def test_items_arriving_while_max_in_flight_batches_are_out_leave_together_when_one_returns() -> None:
    release = asyncio.Event()
    batches: list[list[int]] = []

    async def slow(items: list[int]) -> list[int]:
        batches.append(items)
        if len(batches) == 1:
            await release.wait()
        return items

    coalescer: Coalescer[int, int] = Coalescer(slow, max_batch=100, max_in_flight=1)
    first = asyncio.ensure_future(coalescer.submit(0))
    await asyncio.sleep(0.01)
    later = [asyncio.ensure_future(coalescer.submit(i)) for i in (1, 2, 3)]
    await asyncio.sleep(0.01)
    assert batches == [[0]], "nothing leaves while the one allowed batch is out"
    release.set()
    assert await asyncio.gather(first, *later) == [0, 1, 2, 3]
    assert batches == [[0], [1, 2, 3]]
