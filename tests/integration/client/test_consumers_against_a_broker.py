"""The consumer loops against the real broker, served in this test process (halfmq.testing).

The test broker (tests/conftest.py, `halfmq_broker_settings`) retries nacked messages after a fraction
of a second, but these tests only rely on redelivery happening eventually,
within a generous deadline.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from collections.abc import Callable

from halfmq.client import AsyncConsumer, Consumer, Message, Producer
from halfmq.client.simple_consumer import SimpleConsumer
from tests.support.unique_names import unique


def wait_until(condition: Callable[[], bool], timeout: float, step: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(step)
    return condition()


def total_lag(broker_url: str, group: str, topic: str) -> int:
    with SimpleConsumer(broker_url, group, topic) as client:
        info = client.group_info()
    return sum(q.lag for t in info.topics if t.topic == topic for q in t.queues)


class Running:
    """A Consumer.run() on a thread, so the test can stop it and time how long that takes."""

    def __init__(self, consumer: Consumer) -> None:
        self.consumer = consumer
        self.thread = threading.Thread(target=consumer.run, daemon=True)
        self.thread.start()

    def stop(self, within: float) -> float:
        started = time.monotonic()
        self.consumer.stop()
        self.thread.join(within)
        assert not self.thread.is_alive(), f"run() did not return within {within}s of stop()"
        return time.monotonic() - started


def test_a_consumer_handles_every_message_once_and_acks_it(broker_url: str, producer: Producer) -> None:
    topic, group = unique("SDK_CONSUME"), unique("g")
    producer.create_topic(topic, queues=2)
    producer.send_batch(topic, [f"m{i}" for i in range(30)])
    seen: list[str] = []
    lock = threading.Lock()

    def handler(message: Message) -> None:
        with lock:
            seen.append(message.body)

    with Consumer(broker_url, group, topic, handler, max_messages=8, wait_seconds=1, concurrency=4) as consumer:
        running = Running(consumer)
        assert wait_until(lambda: len(seen) >= 30, timeout=10)
        running.stop(within=5)

    assert sorted(seen) == sorted(f"m{i}" for i in range(30))
    assert wait_until(lambda: total_lag(broker_url, group, topic) == 0, timeout=5)


def test_a_blocking_handler_runs_on_the_consumers_handler_threads_never_on_the_sdk_loop(
    broker_url: str, producer: Producer
) -> None:
    topic, group = unique("SDK_THREADS"), unique("g")
    producer.create_topic(topic, queues=1)
    producer.send_batch(topic, [f"m{i}" for i in range(8)])
    threads: list[str] = []
    lock = threading.Lock()

    def handler(message: Message) -> None:
        time.sleep(0.05)  # blocking is fine here: the polls and acks go on on the loop thread
        with lock:
            threads.append(threading.current_thread().name)

    with Consumer(broker_url, group, topic, handler, max_messages=8, wait_seconds=1, concurrency=2) as consumer:
        running = Running(consumer)
        assert wait_until(lambda: len(threads) >= 8, timeout=10)
        running.stop(within=5)

    assert all(name.startswith("halfmq-handler") for name in threads), threads
    assert len(set(threads)) <= 2, "no more handler threads than concurrency"


def test_a_handler_calling_sys_exit_gets_its_message_again_and_the_consumer_goes_on(
    broker_url: str, producer: Producer
) -> None:
    topic, group = unique("SDK_EXIT"), unique("g")
    producer.create_topic(topic, queues=1)
    producer.send(topic, "quits-once")
    attempts: list[int] = []

    def handler(message: Message) -> None:
        attempts.append(message.delivery_attempt or 0)
        if len(attempts) == 1:
            sys.exit(3)

    with Consumer(broker_url, group, topic, handler, invisible_seconds=2, wait_seconds=1) as consumer:
        running = Running(consumer)
        assert wait_until(lambda: len(attempts) >= 2, timeout=15)
        running.stop(within=5)
    assert attempts[:2] == [1, 2]


def test_close_from_a_handler_stops_the_consumer_instead_of_waiting_for_itself(broker_url: str, producer: Producer) -> None:
    topic, group = unique("SDK_CLOSE_INSIDE"), unique("g")
    producer.create_topic(topic, queues=1)
    producer.send(topic, "last")
    consumer = Consumer(broker_url, group, topic, lambda m: consumer.close(), wait_seconds=1)
    running = Running(consumer)
    running.thread.join(10)
    assert not running.thread.is_alive() and consumer.stopped
    assert wait_until(lambda: total_lag(broker_url, group, topic) == 0, timeout=5), "the handler returned: its message is acked"
    consumer.close()


def test_a_failing_handler_gets_the_message_again_with_a_higher_delivery_attempt(
    broker_url: str, producer: Producer
) -> None:
    topic, group = unique("SDK_RETRY"), unique("g")
    producer.create_topic(topic, queues=1)
    producer.send_batch(topic, ["fine", "flaky"])
    attempts: dict[str, list[int]] = {}
    lock = threading.Lock()

    def handler(message: Message) -> None:
        with lock:
            attempts.setdefault(message.body, []).append(message.delivery_attempt or 0)
            first_try = len(attempts[message.body]) == 1
        if message.body == "flaky" and first_try:
            raise RuntimeError("transient failure in the handler")

    with Consumer(broker_url, group, topic, handler, invisible_seconds=2, wait_seconds=1) as consumer:
        running = Running(consumer)
        assert wait_until(lambda: len(attempts.get("flaky", [])) >= 2, timeout=15)
        running.stop(within=5)

    assert attempts["fine"] == [1]
    assert attempts["flaky"][0] == 1 and attempts["flaky"][1] > 1
    assert wait_until(lambda: total_lag(broker_url, group, topic) == 0, timeout=5)


def test_stop_returns_promptly_while_a_long_poll_is_waiting(broker_url: str, producer: Producer) -> None:
    topic = unique("SDK_IDLE")
    producer.create_topic(topic, queues=1)

    with Consumer(broker_url, unique("g"), topic, lambda m: None, wait_seconds=20) as consumer:
        running = Running(consumer)
        time.sleep(0.5)  # let it enter the long poll
        assert running.stop(within=2) < 2


def test_a_message_that_reaches_a_long_poll_abandoned_at_stop_is_released_not_hidden(
    broker_url: str, producer: Producer
) -> None:
    topic, group = unique("SDK_LATE"), unique("g")
    producer.create_topic(topic, queues=1)
    handled: list[str] = []

    with Consumer(broker_url, group, topic, lambda m: handled.append(m.body), wait_seconds=5) as consumer:
        running = Running(consumer)
        time.sleep(0.5)  # the long poll is now waiting at the broker
        running.stop(within=2)
        producer.send(topic, "arrives-after-stop")  # answers the abandoned poll

        # Left alone it would stay invisible for the default 30 s; released, it is back at once.
        with SimpleConsumer(broker_url, group, topic) as client:
            deadline = time.monotonic() + 8
            again: list[Message] = []
            while not again and time.monotonic() < deadline:
                again = client.receive(max_messages=1, invisible_seconds=30, wait_seconds=1)
    assert handled == []
    assert [m.body for m in again] == ["arrives-after-stop"]
    # The stop cut the poll's connection: the broker gave the message back unseen, so the attempt is not counted.
    assert again[0].delivery_attempt == 1


def test_stop_lets_a_running_handler_finish_and_acks_its_message(broker_url: str, producer: Producer) -> None:
    topic, group = unique("SDK_DRAIN"), unique("g")
    producer.create_topic(topic, queues=1)
    producer.send_batch(topic, ["slow", "later-1", "later-2"])
    started, finished = threading.Event(), threading.Event()
    handled: list[str] = []

    def handler(message: Message) -> None:
        handled.append(message.body)
        started.set()
        time.sleep(1.0)
        finished.set()

    consumer = Consumer(broker_url, group, topic, handler, invisible_seconds=2, wait_seconds=1, concurrency=1)
    with consumer:
        running = Running(consumer)
        assert started.wait(10)
        running.stop(within=5)
        assert finished.is_set(), "run() returned before the in-flight handler finished"

    assert handled == ["slow"], "messages not yet started at stop must not reach the handler"
    # Had its ack not been sent, "slow" would be visible again after 2 s.
    with SimpleConsumer(broker_url, group, topic) as client:
        again: list[str] = []
        deadline = time.monotonic() + 4
        while time.monotonic() < deadline:
            batch = client.receive(max_messages=16, invisible_seconds=30, wait_seconds=1)
            again.extend(m.body for m in batch)
    assert "slow" not in again
    assert sorted(again) == ["later-1", "later-2"], "released messages become deliverable again"


async def test_an_async_consumer_handles_every_message_and_retries_a_failure(
    broker_url: str, producer: Producer
) -> None:
    topic, group = unique("SDK_ASYNC_CONSUME"), unique("g")
    producer.create_topic(topic, queues=2)
    producer.send_batch(topic, [f"m{i}" for i in range(20)])
    attempts: dict[str, list[int]] = {}
    all_done = asyncio.Event()

    async def handler(message: Message) -> None:
        tries = attempts.setdefault(message.body, [])
        tries.append(message.delivery_attempt or 0)
        await asyncio.sleep(0.01)
        if message.body == "m7" and len(tries) == 1:
            raise RuntimeError("transient failure in the handler")
        if len(attempts) == 20 and len(attempts["m7"]) >= 2:
            all_done.set()

    async with AsyncConsumer(
        broker_url, group, topic, handler, max_messages=8, invisible_seconds=2, wait_seconds=1, concurrency=4
    ) as consumer:
        task = asyncio.create_task(consumer.run())
        await asyncio.wait_for(all_done.wait(), timeout=15)
        started = time.monotonic()
        consumer.stop()
        await asyncio.wait_for(task, timeout=5)
        assert time.monotonic() - started < 5

    assert sorted(attempts) == sorted(f"m{i}" for i in range(20))
    assert attempts["m7"][0] == 1 and attempts["m7"][1] > 1
    assert all(tries == [1] for body, tries in attempts.items() if body != "m7")
    assert await asyncio.to_thread(wait_until, lambda: total_lag(broker_url, group, topic) == 0, 5)


async def test_an_async_consumer_stops_promptly_during_a_long_poll_even_from_another_thread(
    broker_url: str, producer: Producer
) -> None:
    topic = unique("SDK_ASYNC_IDLE")
    producer.create_topic(topic, queues=1)

    async with AsyncConsumer(broker_url, unique("g"), topic, lambda m: None, wait_seconds=20) as consumer:
        task = asyncio.create_task(consumer.run())
        await asyncio.sleep(0.5)
        started = time.monotonic()
        threading.Thread(target=consumer.stop).start()
        await asyncio.wait_for(task, timeout=2)
        assert time.monotonic() - started < 2


async def test_an_async_consumer_stopped_mid_backlog_acks_what_it_handled_and_releases_its_prefetched_batch(
    broker_url: str, producer: Producer
) -> None:
    topic, group = unique("SDK_ASYNC_PREFETCH"), unique("g")
    producer.create_topic(topic, queues=1)
    bodies = [f"m{i:02d}" for i in range(60)]
    producer.send_batch(topic, bodies)
    first: list[str] = []

    def stop_after_a_few(message: Message) -> None:
        first.append(message.body)
        if len(first) == 14:  # a few batches in: the next receive is already out (quick batches prefetch)
            consumer.stop()

    # Invisibility far past the test's deadlines: a batch hidden instead of released would be missed.
    consumer = AsyncConsumer(broker_url, group, topic, stop_after_a_few, max_messages=4, invisible_seconds=300,
                             wait_seconds=1, concurrency=1)
    async with consumer:
        await asyncio.wait_for(consumer.run(), timeout=10)

    second: list[str] = []
    rest_done = asyncio.Event()

    def collect(message: Message) -> None:
        second.append(message.body)
        if len(set(first) | set(second)) == len(bodies):
            rest_done.set()

    async with AsyncConsumer(broker_url, group, topic, collect, max_messages=16, invisible_seconds=300,
                             wait_seconds=1) as again:
        task = asyncio.create_task(again.run())
        await asyncio.wait_for(rest_done.wait(), timeout=15)
        again.stop()
        await asyncio.wait_for(task, timeout=5)

    assert len(first) >= 14
    assert sorted(set(first) | set(second)) == bodies, "every message is handled by one consumer or the other"
    assert not set(first) & set(second), "what the stopped consumer handled was acked before run() returned"
    assert await asyncio.to_thread(wait_until, lambda: total_lag(broker_url, group, topic) == 0, 5), "every ack arrived"
