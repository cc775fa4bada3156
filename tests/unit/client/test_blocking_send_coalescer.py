"""The threaded coalescer: concurrent threads share requests, each with its own outcome, and none is left waiting."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from halfmq.client.blocking_send_coalescer import BlockingSendCoalescer
from halfmq.errors import BrokerUnavailable, InvalidProperty
from halfmq.wire import OutgoingMessage, SendResult, SendStatus


class Recorder:
    def __init__(self, refuse: str | None = None, unavailable: bool = False, delay: float = 0.0) -> None:
        self.requests: list[list[str]] = []
        self.refuse, self.unavailable, self.delay = refuse, unavailable, delay
        self._lock = threading.Lock()

    def batch(self, topic: str, messages: list[OutgoingMessage]) -> list[SendResult]:
        with self._lock:
            self.requests.append([m.body for m in messages])
        time.sleep(self.delay)
        if self.unavailable:
            raise BrokerUnavailable("down")
        if self.refuse is not None and any(m.body == self.refuse for m in messages):
            raise InvalidProperty(f"{self.refuse} is bad")
        return [SendResult(SendStatus.SEND_OK, m.body, topic, 0, i, 0) for i, m in enumerate(messages)]

    def one(self, topic: str, message: OutgoingMessage) -> SendResult:
        return self.batch(topic, [message])[0]


def send_all(sends: BlockingSendCoalescer, bodies: list[str]) -> list[SendResult | BaseException]:
    def one(body: str) -> SendResult | BaseException:
        try:
            return sends.send("T", OutgoingMessage(body))
        except Exception as exc:  # noqa: BLE001 - returned for the assertions
            return exc

    with ThreadPoolExecutor(len(bodies)) as pool:
        return list(pool.map(one, bodies))


def test_a_lone_send_is_one_request_at_once() -> None:
    recorder = Recorder()
    assert BlockingSendCoalescer(recorder.batch, recorder.one).send("T", OutgoingMessage("a")).msg_id == "a"
    assert recorder.requests == [["a"]]


def test_threads_sending_while_requests_are_in_flight_share_the_next_requests_and_each_gets_its_own_result() -> None:
    recorder = Recorder(delay=0.05)
    bodies = [f"m{i}" for i in range(40)]
    results = send_all(BlockingSendCoalescer(recorder.batch, recorder.one, max_requests=1), bodies)
    assert [r.msg_id for r in results] == bodies  # type: ignore[union-attr]
    assert sorted(sum(recorder.requests, [])) == sorted(bodies)
    assert len(recorder.requests) < 20


def test_a_refused_shared_request_sends_each_member_alone_so_only_the_bad_one_fails() -> None:
    recorder = Recorder(refuse="bad", delay=0.05)
    bodies = [f"g{i}" for i in range(10)] + ["bad"]
    outcomes = send_all(BlockingSendCoalescer(recorder.batch, recorder.one, max_requests=1), bodies)
    assert isinstance(outcomes[-1], InvalidProperty)
    assert [o.msg_id for o in outcomes[:-1]] == bodies[:-1]  # type: ignore[union-attr]
    assert sum(r == ["bad"] for r in recorder.requests) == 1


def test_a_failed_request_reaches_each_of_its_callers_as_an_error_of_their_own() -> None:
    recorder = Recorder(unavailable=True, delay=0.02)
    outcomes = send_all(BlockingSendCoalescer(recorder.batch, recorder.one, max_requests=1), [f"m{i}" for i in range(8)])
    assert all(isinstance(o, BrokerUnavailable) for o in outcomes)
    assert len({id(o) for o in outcomes}) == 8
