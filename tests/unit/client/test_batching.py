"""The batching engine: one event-loop pass, one batch per key; each caller its own outcome; no timer; driven from threads for blocking callers."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

import pytest

from halfmq.client.batching import PassCoalescer, UpTo
from halfmq.client.loop_thread import run
from halfmq.client.send_policy import send_coalescer
from halfmq.errors import BrokerUnavailable, InvalidProperty
from halfmq.wire import OutgoingMessage, SendResult, SendStatus
from tests.support.loop_steps import run_ready, until


class Recorder:
    def __init__(self, fail: Exception | None = None) -> None:
        self.batches: list[list[int]] = []
        self.fail = fail

    async def send(self, key: str, items: list[int]) -> Sequence[int | Exception]:
        self.batches.append(items)
        await asyncio.sleep(0)
        if self.fail is not None:
            raise self.fail
        return [ValueError(f"odd {i}") if i % 2 else i * 10 for i in items]


async def test_the_calls_of_one_pass_go_out_as_one_batch_and_each_gets_its_own_outcome() -> None:
    recorder = Recorder()
    coalescer: PassCoalescer[str, int, int] = PassCoalescer(recorder.send, UpTo(100))
    outcomes = await asyncio.gather(*(coalescer.submit("k", i) for i in range(6)), return_exceptions=True)
    assert recorder.batches == [[0, 1, 2, 3, 4, 5]]
    assert [o if isinstance(o, int) else str(o) for o in outcomes] == [0, "odd 1", 20, "odd 3", 40, "odd 5"]


async def test_a_lone_call_goes_out_on_the_next_pass_without_a_timer() -> None:
    recorder = Recorder()
    coalescer: PassCoalescer[str, int, int] = PassCoalescer(recorder.send, UpTo(100))
    assert await asyncio.wait_for(coalescer.submit("k", 2), timeout=0.05) == 20
    assert recorder.batches == [[2]]


async def test_a_pass_larger_than_max_batch_is_split() -> None:
    recorder = Recorder()
    coalescer: PassCoalescer[str, int, int] = PassCoalescer(recorder.send, UpTo(4))
    await asyncio.gather(*(coalescer.submit("k", i * 2) for i in range(10)))
    assert [len(b) for b in recorder.batches] == [4, 4, 2]


async def test_a_failed_batch_fails_each_caller_with_its_own_copy_of_the_error() -> None:
    recorder = Recorder(fail=BrokerUnavailable("down", sent=False))
    coalescer: PassCoalescer[str, int, int] = PassCoalescer(recorder.send, UpTo(100))
    outcomes = await asyncio.gather(*(coalescer.submit("k", i) for i in range(3)), return_exceptions=True)
    assert all(isinstance(o, BrokerUnavailable) and o.sent is False for o in outcomes)
    assert len({id(o) for o in outcomes}) == 3, "a retry policy rewrites the error it gives up with"


async def test_a_caller_cancelled_before_its_batch_left_is_not_sent_and_the_others_are() -> None:
    recorder = Recorder()
    coalescer: PassCoalescer[str, int, int] = PassCoalescer(recorder.send, UpTo(100))
    doomed = asyncio.ensure_future(coalescer.submit("k", 4))
    kept = asyncio.ensure_future(coalescer.submit("k", 6))
    await asyncio.sleep(0)  # both submitted; the batch leaves on the next pass
    doomed.cancel()
    assert await kept == 60
    assert recorder.batches == [[6]]


def test_max_batch_must_be_positive() -> None:
    with pytest.raises(ValueError):
        UpTo(max_batch=0)


async def test_items_arriving_while_max_in_flight_batches_are_out_leave_together_when_one_returns() -> None:
    release = asyncio.Event()
    batches: list[list[int]] = []

    async def slow(key: str, items: list[int]) -> list[int]:
        batches.append(items)
        if len(batches) == 1:
            await release.wait()
        return items

    coalescer: PassCoalescer[str, int, int] = PassCoalescer(slow, UpTo(100, max_in_flight=1))
    first = asyncio.ensure_future(coalescer.submit("k", 0))
    await until(lambda: batches)  # the first batch is out
    later = [asyncio.ensure_future(coalescer.submit("k", i)) for i in (1, 2, 3)]
    await run_ready()
    assert batches == [[0]], "nothing leaves while the one allowed batch is out"
    release.set()
    assert await asyncio.gather(first, *later) == [0, 1, 2, 3]
    assert batches == [[0], [1, 2, 3]]


# --- driven from threads: the blocking producer's sends, which meet on the SDK's loop thread ---


class BlockingSendCoalescer:
    """The engine as the blocking ``Producer`` drives it: each thread runs its submit on the one loop thread."""

    def __init__(self, coalescer: PassCoalescer[str, OutgoingMessage, SendResult], on_submit: Callable[[], None]) -> None:
        self._coalescer = coalescer
        self._on_submit = on_submit

    def submit(self, topic: str, message: OutgoingMessage) -> SendResult:
        return run(self._submitted(topic, message))

    async def _submitted(self, topic: str, message: OutgoingMessage) -> SendResult:
        self._on_submit()
        return await self._coalescer.submit(topic, message)


class ThreadRecorder:
    """The producer's send paths on the loop thread. The first request is answered only once ``first_answer_after``
    sends have reached the loop: the others arrive while it is out, whatever the threads' timing."""

    def __init__(self, refuse: str | None = None, unavailable: bool = False, first_answer_after: int = 0) -> None:
        self.requests: list[list[str]] = []
        self.refuse, self.unavailable, self.first_answer_after = refuse, unavailable, first_answer_after
        self.submitted = 0
        self._everyone_in = asyncio.Event()  # used on the loop thread only
        self._lock = threading.Lock()

    def submit_arrived(self) -> None:
        self.submitted += 1
        if self.submitted >= self.first_answer_after:
            self._everyone_in.set()

    async def batch(self, topic: str, messages: list[OutgoingMessage]) -> list[SendResult]:
        with self._lock:
            self.requests.append([m.body for m in messages])
            first = len(self.requests) == 1
        if first and self.first_answer_after:
            await self._everyone_in.wait()
        if self.unavailable:
            raise BrokerUnavailable("down")
        if self.refuse is not None and any(m.body == self.refuse for m in messages):
            raise InvalidProperty(f"{self.refuse} is bad")
        return [SendResult(SendStatus.SEND_OK, m.body, topic, 0, i, 0) for i, m in enumerate(messages)]

    async def one(self, topic: str, message: OutgoingMessage) -> SendResult:
        return (await self.batch(topic, [message]))[0]


def blocking(recorder: ThreadRecorder, **limits: int) -> BlockingSendCoalescer:
    return BlockingSendCoalescer(send_coalescer(recorder.batch, recorder.one, **limits), recorder.submit_arrived)


def send_all(sends: BlockingSendCoalescer, bodies: list[str]) -> list[SendResult | BaseException]:
    def one(body: str) -> SendResult | BaseException:
        try:
            return sends.submit("T", OutgoingMessage(body))
        except Exception as exc:  # noqa: BLE001 - returned for the assertions
            return exc

    with ThreadPoolExecutor(len(bodies)) as pool:
        return list(pool.map(one, bodies))


def test_a_lone_send_is_one_request_at_once() -> None:
    recorder = ThreadRecorder()
    assert blocking(recorder).submit("T", OutgoingMessage("a")).msg_id == "a"
    assert recorder.requests == [["a"]]


def test_threads_sending_while_requests_are_in_flight_share_the_next_requests_and_each_gets_its_own_result() -> None:
    bodies = [f"m{i}" for i in range(40)]
    recorder = ThreadRecorder(first_answer_after=len(bodies))
    results = send_all(blocking(recorder, max_requests=1), bodies)
    assert [r.msg_id for r in results] == bodies  # type: ignore[union-attr]
    assert sorted(sum(recorder.requests, [])) == sorted(bodies)
    assert len(recorder.requests) < 20


def test_a_refused_shared_request_sends_each_member_alone_so_only_the_bad_one_fails() -> None:
    bodies = [f"g{i}" for i in range(10)] + ["bad"]
    recorder = ThreadRecorder(refuse="bad", first_answer_after=len(bodies))
    outcomes = send_all(blocking(recorder, max_requests=1), bodies)
    assert isinstance(outcomes[-1], InvalidProperty)
    assert [o.msg_id for o in outcomes[:-1]] == bodies[:-1]  # type: ignore[union-attr]
    assert sum(r == ["bad"] for r in recorder.requests) == 1


def test_a_failed_request_reaches_each_of_its_callers_as_an_error_of_their_own() -> None:
    recorder = ThreadRecorder(unavailable=True, first_answer_after=8)
    outcomes = send_all(blocking(recorder, max_requests=1), [f"m{i}" for i in range(8)])
    assert all(isinstance(o, BrokerUnavailable) for o in outcomes)
    assert len({id(o) for o in outcomes}) == 8
