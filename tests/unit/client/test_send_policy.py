"""Plain sends through the batching engine: its decisions (which sends go next, which refusal is whose) and its bookkeeping, with recording senders."""

from __future__ import annotations

import asyncio

import pytest

from halfmq.client.batching import PassCoalescer
from halfmq.client.send_policy import Limits, concerns_the_request, send_coalescer, take_count, wire_size
from halfmq.errors import BrokerUnavailable, InvalidProperty, MessageTooLarge, TopicNotFound
from halfmq.wire import MAX_BATCH, OutgoingMessage, SendResult, SendStatus
from tests.support.loop_steps import run_ready, until


def test_the_next_request_takes_every_pending_send_up_to_the_message_limit() -> None:
    assert take_count([10] * 5, max_messages=100, max_bytes=1000) == 5
    assert take_count([10] * 150, max_messages=100, max_bytes=10_000) == 100


def test_a_burst_is_shared_among_the_requests_that_may_start_but_never_in_shares_below_the_minimum() -> None:
    assert take_count([10] * 64, free_requests=4, min_share=16) == 16
    assert take_count([10] * 200, free_requests=4, min_share=16) == 50
    assert take_count([10] * 20, free_requests=4, min_share=16) == 16
    assert take_count([10] * 5, free_requests=4, min_share=16) == 5


def test_the_next_request_stops_before_the_byte_limit_but_always_takes_one() -> None:
    assert take_count([400, 400, 400], max_messages=100, max_bytes=1000) == 2
    assert take_count([5000, 10], max_messages=100, max_bytes=1000) == 1
    assert take_count([], max_messages=100, max_bytes=1000) == 0


def test_a_messages_size_counts_its_text_in_utf8_bytes_so_multi_byte_text_stays_under_the_byte_limit() -> None:
    ascii_body, emoji_body = OutgoingMessage(body="x" * 1000), OutgoingMessage(body="\N{GRINNING FACE}" * 1000)  # 1,000 / 4,000 bytes
    assert wire_size(emoji_body) - wire_size(ascii_body) == 3000
    tagged = OutgoingMessage(body="x", tag="\N{GRINNING FACE}" * 10, keys=["\N{GRINNING FACE}" * 10], properties={"n": "\N{GRINNING FACE}" * 10})
    assert wire_size(tagged) >= 3 * 40
    limits = Limits(max_in_flight=1, max_bytes=10_000)
    assert limits.take([ascii_body] * 8, in_flight=0) == 8
    assert limits.take([emoji_body] * 8, in_flight=0) == 2  # 4 KiB each: two fit 10,000 bytes


def test_a_refusal_about_one_message_sends_the_members_alone_and_a_refusal_about_the_request_does_not() -> None:
    assert not concerns_the_request(InvalidProperty("bad UNIQ_KEY"))
    assert not concerns_the_request(MessageTooLarge("too big"))
    assert concerns_the_request(TopicNotFound("no topic"))
    assert concerns_the_request(BrokerUnavailable("down"))
    assert concerns_the_request(RuntimeError("not a broker error"))


class Recorder:
    """Stands in for the producer's two send paths; records each request's bodies. A ``held`` recorder answers no
    request until the test sets ``release``: the requests stay in flight for as long as the test needs."""

    def __init__(self, refuse: str | None = None, unavailable: bool = False, held: bool = False) -> None:
        self.requests: list[list[str]] = []
        self.refuse = refuse
        self.unavailable = unavailable
        self.release = asyncio.Event()
        if not held:
            self.release.set()

    async def batch(self, topic: str, messages: list[OutgoingMessage]) -> list[SendResult]:
        self.requests.append([m.body for m in messages])
        await asyncio.sleep(0)  # an answer takes at least one loop pass
        await self.release.wait()
        if self.unavailable:
            raise BrokerUnavailable("down")
        if self.refuse is not None and any(m.body == self.refuse for m in messages):
            raise InvalidProperty(f"{self.refuse} is bad")
        return [SendResult(SendStatus.SEND_OK, m.body, topic, 0, i, 0) for i, m in enumerate(messages)]

    async def one(self, topic: str, message: OutgoingMessage) -> SendResult:
        return (await self.batch(topic, [message]))[0]


def coalescer(recorder: Recorder, **kwargs: int) -> PassCoalescer[str, OutgoingMessage, SendResult]:
    return send_coalescer(recorder.batch, recorder.one, **kwargs)


async def test_sends_of_one_loop_pass_share_one_request_and_each_gets_its_own_result() -> None:
    recorder = Recorder()
    sends = coalescer(recorder)
    results = await asyncio.gather(*(sends.submit("T", OutgoingMessage(f"m{i}")) for i in range(10)))
    assert recorder.requests == [[f"m{i}" for i in range(10)]]
    assert [r.msg_id for r in results] == [f"m{i}" for i in range(10)]


async def test_a_large_burst_is_shared_among_parallel_requests() -> None:
    recorder = Recorder()
    sends = coalescer(recorder, max_requests=4, min_share=16)
    await asyncio.gather(*(sends.submit("T", OutgoingMessage(f"m{i}")) for i in range(64)))
    assert [len(r) for r in recorder.requests] == [16, 16, 16, 16]
    assert sum(recorder.requests, []) == [f"m{i}" for i in range(64)]


async def test_a_lone_send_goes_as_a_single_request() -> None:
    recorder = Recorder()
    result = await coalescer(recorder).submit("T", OutgoingMessage("alone"))
    assert recorder.requests == [["alone"]] and result.msg_id == "alone"


async def test_sends_made_while_requests_are_in_flight_gather_for_the_next_request() -> None:
    recorder = Recorder(held=True)
    sends = coalescer(recorder, max_requests=1)
    first = asyncio.ensure_future(sends.submit("T", OutgoingMessage("first")))
    await until(lambda: recorder.requests)  # the first request is in flight
    later = [asyncio.ensure_future(sends.submit("T", OutgoingMessage(f"l{i}"))) for i in range(3)]
    await run_ready()
    more = asyncio.ensure_future(sends.submit("T", OutgoingMessage("l3")))
    await run_ready()
    recorder.release.set()
    await asyncio.gather(first, *later, more)
    assert recorder.requests == [["first"], ["l0", "l1", "l2", "l3"]]


async def test_no_request_carries_more_than_the_message_limit() -> None:
    recorder = Recorder()
    await asyncio.gather(*(coalescer(recorder).submit("T", OutgoingMessage("x")) for _ in range(1)))
    sends = coalescer(recorder, max_requests=1)
    await asyncio.gather(*(sends.submit("T", OutgoingMessage("x")) for _ in range(MAX_BATCH + 5)))
    assert sorted(len(r) for r in recorder.requests[1:]) == [5, MAX_BATCH]


async def test_each_topic_gets_its_own_requests() -> None:
    recorder = Recorder()
    sends = send_coalescer(recorder.batch, recorder.one)
    await asyncio.gather(sends.submit("A", OutgoingMessage("a")), sends.submit("B", OutgoingMessage("b")),
                         sends.submit("A", OutgoingMessage("a2")))
    assert sorted(recorder.requests) == [["a", "a2"], ["b"]]


async def test_a_refused_batch_is_resent_one_by_one_so_only_the_bad_message_gets_the_error() -> None:
    recorder = Recorder(refuse="bad")
    sends = coalescer(recorder)
    outcomes = await asyncio.gather(*(sends.submit("T", OutgoingMessage(b)) for b in ("g1", "bad", "g2")),
                                    return_exceptions=True)
    assert isinstance(outcomes[1], InvalidProperty)
    assert [o.msg_id for o in (outcomes[0], outcomes[2])] == ["g1", "g2"]  # type: ignore[union-attr]
    assert recorder.requests == [["g1", "bad", "g2"], ["g1"], ["bad"], ["g2"]]


async def test_a_failure_of_the_whole_request_reaches_every_caller_as_an_error_of_its_own() -> None:
    recorder = Recorder(unavailable=True)
    sends = coalescer(recorder)
    outcomes = await asyncio.gather(*(sends.submit("T", OutgoingMessage(f"m{i}")) for i in range(3)),
                                    return_exceptions=True)
    assert all(isinstance(o, BrokerUnavailable) for o in outcomes)
    assert len({id(o) for o in outcomes}) == 3
    assert recorder.requests == [["m0", "m1", "m2"]]  # not resent one by one: each alone would have failed alike


async def test_a_cancelled_caller_does_not_cancel_the_others_request() -> None:
    recorder = Recorder(held=True)
    sends = coalescer(recorder)
    tasks = [asyncio.ensure_future(sends.submit("T", OutgoingMessage(f"m{i}"))) for i in range(3)]
    await until(lambda: recorder.requests)  # the request is in flight
    tasks[1].cancel()
    await run_ready()
    recorder.release.set()
    done = await asyncio.gather(*tasks, return_exceptions=True)
    assert isinstance(done[1], asyncio.CancelledError)
    assert [done[0].msg_id, done[2].msg_id] == ["m0", "m2"]  # type: ignore[union-attr]


async def test_a_caller_cancelled_before_its_request_left_is_not_sent() -> None:
    recorder = Recorder(held=True)
    sends = coalescer(recorder, max_requests=1)
    first = asyncio.ensure_future(sends.submit("T", OutgoingMessage("first")))
    await until(lambda: recorder.requests)  # the first request is in flight
    gone = asyncio.ensure_future(sends.submit("T", OutgoingMessage("gone")))
    kept = asyncio.ensure_future(sends.submit("T", OutgoingMessage("kept")))
    await asyncio.sleep(0)
    gone.cancel()
    recorder.release.set()
    await asyncio.gather(first, kept, gone, return_exceptions=True)
    assert recorder.requests == [["first"], ["kept"]]


async def test_drain_returns_once_every_accepted_send_has_its_answer() -> None:
    recorder = Recorder(held=True)
    sends = coalescer(recorder, max_requests=1)
    tasks = [asyncio.ensure_future(sends.submit("T", OutgoingMessage(f"m{i}"))) for i in range(5)]
    await asyncio.sleep(0)
    drained = asyncio.ensure_future(sends.drain())
    await run_ready()
    assert not drained.done()  # a request is still out
    recorder.release.set()
    await asyncio.wait_for(drained, 2)
    assert all(t.done() for t in tasks)
    assert sum(len(r) for r in recorder.requests) == 5


async def test_a_sender_that_answers_with_too_few_results_fails_its_callers_instead_of_leaving_them_waiting() -> None:
    async def short(topic: str, messages: list[OutgoingMessage]) -> list[SendResult]:
        return []

    sends = send_coalescer(short, Recorder().one)
    outcomes = await asyncio.wait_for(asyncio.gather(*(sends.submit("T", OutgoingMessage(f"m{i}")) for i in range(3)),
                                                     return_exceptions=True), 2)
    assert all(isinstance(o, ValueError) for o in outcomes)


def test_limits_that_cannot_work_are_refused() -> None:
    recorder = Recorder()
    with pytest.raises(ValueError, match="max_messages"):
        send_coalescer(recorder.batch, recorder.one, max_messages=MAX_BATCH + 1)
    with pytest.raises(ValueError, match="min_share"):
        send_coalescer(recorder.batch, recorder.one, min_share=0)
