"""Delayed and timed messages through the SDK, against the real broker served in this test process."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest

from halfmq.client import AsyncProducer, Message, Producer, SimpleConsumer
from halfmq.errors import InvalidDeliveryTime, InvalidRecallHandle, RecallTooLate, ReservedProperty
from tests.support.unique_names import unique


def _receive_all(broker_url: str, group: str, topic: str, count: int, within: float) -> list[tuple[Message, float]]:
    got: list[tuple[Message, float]] = []
    with SimpleConsumer(broker_url, group, topic) as consumer:
        deadline = time.monotonic() + within
        while len(got) < count and time.monotonic() < deadline:
            batch = consumer.receive(max_messages=16, wait_seconds=0.5)
            got += [(m, time.time()) for m in batch]
            if batch:
                consumer.ack([m.receipt_handle for m in batch if m.receipt_handle])
    return got


def test_a_delayed_and_a_timed_message_arrive_no_earlier_than_due_and_name_their_due_time(broker_url: str) -> None:
    topic = unique("SDK_TIMED")
    with Producer(broker_url) as producer:
        producer.create_topic(topic, queues=2)
        sent_at = time.time()
        delayed = producer.send(topic, "delayed", delay=1.5)
        timed = producer.send(topic, "timed", deliver_at=datetime.now(UTC) + timedelta(seconds=1))
        plain = producer.send(topic, "plain")
    assert delayed.queue_offset == -1 and delayed.deliver_at_ms is not None and delayed.deliver_at_ms >= sent_at * 1000 + 1_500
    assert timed.queue_offset == -1 and timed.deliver_at_ms is not None
    assert plain.deliver_at_ms is None and plain.queue_offset >= 0
    got = _receive_all(broker_url, unique("g"), topic, 3, within=15)
    assert sorted(m.body for m, _ in got) == ["delayed", "plain", "timed"]
    for message, received_at in got:
        if message.body != "plain":
            assert message.deliver_at_ms == (delayed if message.body == "delayed" else timed).deliver_at_ms
            assert received_at * 1000 >= message.deliver_at_ms


def test_a_raw_timer_property_and_a_delay_past_the_maximum_are_refused(broker_url: str) -> None:
    with Producer(broker_url, retries=0) as producer:
        with pytest.raises(ReservedProperty):
            producer.send(unique("SDK_TIMED"), "x", properties={"TIMER_DELIVER_MS": "1"})
        with pytest.raises(InvalidDeliveryTime):
            producer.send(unique("SDK_TIMED"), "x", delay=timedelta(days=4))


def test_a_delayed_message_recalled_through_the_sdk_never_arrives_and_a_due_one_is_too_late(broker_url: str) -> None:
    topic = unique("SDK_RECALL")
    with Producer(broker_url) as producer:
        producer.create_topic(topic, queues=1)
        recalled = producer.send(topic, "recalled", delay=1.0)
        kept = producer.send(topic, "kept", delay=1.0)
        assert recalled.recall_handle and kept.recall_handle and producer.send(topic, "plain").recall_handle is None
        answer = producer.recall(topic, recalled.recall_handle)
        assert (answer.msg_id, answer.topic, answer.deliver_at_ms, answer.duplicate) == (recalled.msg_id, topic, recalled.deliver_at_ms, False)
        assert producer.recall(topic, recalled.recall_handle).duplicate  # a retry is answered, not refused
        got = _receive_all(broker_url, unique("g"), topic, 3, within=6)  # past the due time of both
        assert sorted(m.body for m, _ in got) == ["kept", "plain"]
        with pytest.raises(RecallTooLate):
            producer.recall(topic, kept.recall_handle)
        with pytest.raises(InvalidRecallHandle):
            producer.recall(topic, "not-a-handle")


async def test_the_async_producer_recalls_a_delayed_message(broker_url: str) -> None:
    topic = unique("SDK_RECALL")
    async with AsyncProducer(broker_url) as producer:
        sent = await producer.send(topic, "later", delay=timedelta(minutes=5))
        assert sent.recall_handle is not None
        answer = await producer.recall(topic, sent.recall_handle)
        assert (answer.msg_id, answer.duplicate) == (sent.msg_id, False)
