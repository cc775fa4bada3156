"""The SDK's README promises against the real broker (issue 45): the habits RocketMQ and Kafka users bring work.

``ack``/``nack`` take the received messages themselves; ``change_invisible_duration`` keeps a slow handler's message
from other consumers; a topic name the broker would refuse is refused at the call site, before any request.
"""

from __future__ import annotations

import asyncio
import threading
import time

import httpx
import pytest

from halfmq import AsyncConsumer, Consumer, InvalidTopicName, Message, Producer, SettleStatus, SimpleConsumer
from tests.support.unique_names import unique


def received(consumer: SimpleConsumer, count: int, invisible_seconds: float = 30.0) -> list[Message]:
    got: list[Message] = []
    deadline = time.monotonic() + 20
    while len(got) < count and time.monotonic() < deadline:
        got += consumer.receive(max_messages=count - len(got), invisible_seconds=invisible_seconds, wait_seconds=1)
    return got


def test_a_simple_consumer_acks_the_messages_it_received_as_kafka_and_rocketmq_users_pass_them(
        broker_url: str, producer: Producer) -> None:
    topic = unique("ACKMSG")
    for n in range(3):
        producer.send(topic, f"m{n}")
    with SimpleConsumer(broker_url, unique("g"), topic) as consumer:
        messages = received(consumer, 3)
        acked = consumer.ack(messages[:2])
        nacked = consumer.nack(messages[2:], reason="not now")
        assert [r.status for r in acked + nacked] == [SettleStatus.OK] * 3
        again = received(consumer, 1)  # the nacked one comes back; the acked ones never do
        assert [m.body for m in again] == [messages[2].body]
        assert [r.status for r in consumer.ack([again[0].receipt_handle or ""])] == [SettleStatus.OK]  # handles still work


def test_a_message_kept_with_change_invisible_duration_is_not_handed_to_another_consumer_meanwhile(
        broker_url: str, producer: Producer) -> None:
    topic, group = unique("SLOW"), unique("g")
    producer.send(topic, "slow work")
    with SimpleConsumer(broker_url, group, topic) as first, SimpleConsumer(broker_url, group, topic) as second:
        [message] = received(first, 1, invisible_seconds=1.0)
        assert first.change_invisible_duration(message, 30) is True
        time.sleep(1.5)  # past the receive's invisible_seconds: without the change the message would be visible again
        assert second.receive(max_messages=1, invisible_seconds=5, wait_seconds=1) == []
        assert first.change_invisible_duration(message, 0) is True  # 0: visible again at once
        [again] = received(second, 1)
        assert again.msg_id == message.msg_id
        assert first.change_invisible_duration(message, 10) is False  # the first receipt no longer holds it


def test_a_handler_of_the_blocking_consumer_keeps_its_message_while_it_works_past_invisible_seconds(
        broker_url: str, producer: Producer) -> None:
    topic, group = unique("SLOWLOOP"), unique("g")
    producer.send(topic, "slow")
    attempts: list[int | None] = []
    done = threading.Event()

    def handler(message: Message) -> None:
        attempts.append(message.delivery_attempt)
        assert consumer.change_invisible_duration(message, 30)
        time.sleep(2.0)  # past invisible_seconds=1
        done.set()

    consumer = Consumer(broker_url, group, topic, handler, invisible_seconds=1.0, wait_seconds=1.0)
    thread = threading.Thread(target=consumer.run, daemon=True)
    thread.start()
    try:
        assert done.wait(20)
        time.sleep(0.5)
    finally:
        consumer.stop()
        thread.join(20)
        consumer.close()
    assert attempts == [1]  # never redelivered while its handler held it


async def test_an_async_handler_keeps_its_message_with_change_invisible_duration(broker_url: str, producer: Producer) -> None:
    topic, group = unique("ASLOW"), unique("g")
    producer.send(topic, "slow")
    attempts: list[int | None] = []
    done = asyncio.Event()

    async def handler(message: Message) -> None:
        attempts.append(message.delivery_attempt)
        assert await consumer.change_invisible_duration(message, 30)
        await asyncio.sleep(2.0)
        done.set()

    consumer = AsyncConsumer(broker_url, group, topic, handler, invisible_seconds=1.0, wait_seconds=1.0)
    running = asyncio.create_task(consumer.run())
    await asyncio.wait_for(done.wait(), 20)
    await asyncio.sleep(0.5)
    await consumer.close()
    await running
    assert attempts == [1]


@pytest.mark.parametrize("name", ["orders/eu", "orders eu", "", "x" * 200])
def test_a_topic_name_the_broker_would_refuse_is_refused_at_the_call_site(producer: Producer, name: str) -> None:
    with pytest.raises(InvalidTopicName, match="A-Z a-z 0-9 _ -"):
        producer.send(name, "hello")
    with pytest.raises(InvalidTopicName):
        producer.create_topic(name)


@pytest.mark.parametrize(("path", "code"), [("/v1/topics/a%2Fb/messages", "INVALID_TOPIC_NAME"),
                                            ("/v1/consumer-groups/g%2F1/topics/T/receive", "INVALID_GROUP_NAME")])
def test_a_name_with_a_slash_sent_over_http_is_refused_as_an_invalid_name_not_an_unknown_route(
        broker_url: str, path: str, code: str) -> None:
    answer = httpx.post(broker_url + path, json={"messages": [{"body": "x"}]})
    assert (answer.status_code, answer.json()["code"]) == (400, code)


def test_a_simple_consumer_with_a_tag_filter_receives_only_those_tags_and_its_group_never_gets_the_others(
        broker_url: str, producer: Producer) -> None:
    topic = unique("TAGGED")
    for n, tag in enumerate(["created", "paid", "shipped", "created"]):
        producer.send(topic, f"m{n}", tag=tag)
    with SimpleConsumer(broker_url, unique("g"), topic) as consumer:
        got = consumer.receive(max_messages=16, wait_seconds=1, tags="created || paid")
        assert [(m.body, m.tag) for m in got] == [("m0", "created"), ("m1", "paid"), ("m3", "created")]
        consumer.ack(got)
        assert consumer.receive(max_messages=16, wait_seconds=1) == []  # "shipped" was consumed for this group
    with SimpleConsumer(broker_url, unique("g"), topic) as other:
        assert [m.body for m in other.receive(max_messages=16, wait_seconds=1, tags=["shipped"])] == ["m2"]


def test_a_consumer_with_a_tag_filter_hands_its_handler_only_those_tags(broker_url: str, producer: Producer) -> None:
    topic, seen, done = unique("TAGLOOP"), [], threading.Event()
    for n, tag in enumerate(["a", "b", "a", "c"]):
        producer.send(topic, f"m{n}", tag=tag)

    def handle(message: Message) -> None:
        seen.append(message.body)
        if len(seen) == 2:
            done.set()

    consumer = Consumer(broker_url, unique("g"), topic, handle, wait_seconds=1, tags=["a"])
    thread = threading.Thread(target=consumer.run, daemon=True)
    thread.start()
    try:
        assert done.wait(20)
        time.sleep(1)  # a third message would come within a poll
    finally:
        consumer.stop()
        thread.join(20)
        consumer.close()
    assert sorted(seen) == ["m0", "m2"]


def test_a_tag_filter_past_its_bounds_is_refused_at_the_call_site() -> None:
    with pytest.raises(ValueError, match="at most 32 tags"):
        Consumer("http://127.0.0.1:9", "g", "T", print, tags=[f"t{i}" for i in range(33)])
