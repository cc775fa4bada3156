"""The producer SDK against the real broker, served in this test process (halfmq.testing)."""

from __future__ import annotations

import asyncio
import socket

import pytest

from halfmq.client import (
    UNIQ_KEY,
    AsyncProducer,
    BrokerUnavailable,
    OutgoingMessage,
    Producer,
    SendStatus,
    message_body_bytes,
    message_json,
)
from halfmq.errors import SystemTopicForbidden
from tests.support.unique_names import unique


def test_a_sent_message_can_be_read_back_at_its_queue_offset(producer: Producer) -> None:
    topic = unique("SDK_SEND")
    info = producer.create_topic(topic, queues=2)
    assert info.name == topic and [q.queue_id for q in info.queues] == [0, 1]

    result = producer.send(topic, "hello", keys=["order-1"], tag="TagA", properties={"p": "v"})

    assert result.status is SendStatus.SEND_OK
    page = producer.read(topic, result.queue_id, result.queue_offset, max=1)
    [message] = page.messages
    assert (message.body, message.keys, message.tag) == ("hello", ["order-1"], "TagA")
    assert message.properties["p"] == "v"
    assert message.msg_id == result.msg_id == message.properties[UNIQ_KEY]
    assert page.next_offset == result.queue_offset + 1
    queue = next(q for q in producer.get_topic(topic).queues if q.queue_id == result.queue_id)
    assert queue.max_offset == result.queue_offset + 1


def test_send_batch_returns_one_result_per_message_in_the_order_sent(producer: Producer) -> None:
    topic = unique("SDK_BATCH")
    producer.create_topic(topic, queues=1)

    results = producer.send_batch(topic, [f"m{i}" for i in range(10)])

    assert [r.status for r in results] == [SendStatus.SEND_OK] * 10
    assert [r.queue_offset for r in results] == list(range(10))
    page = producer.read(topic, 0, 0, max=32)
    assert [m.body for m in page.messages] == [f"m{i}" for i in range(10)]
    assert len({m.msg_id for m in page.messages}) == 10


def test_a_bytes_body_round_trips_through_base64(producer: Producer) -> None:
    topic = unique("SDK_BYTES")
    producer.create_topic(topic, queues=1)
    payload = bytes(range(256)) + b"\x00\xff\xfe"

    result = producer.send(topic, payload)

    [message] = producer.read(topic, 0, result.queue_offset, max=1).messages
    assert message.body_encoding == "base64"
    assert message_body_bytes(message) == payload


def test_a_dict_body_is_sent_as_json_text(producer: Producer) -> None:
    topic = unique("SDK_JSON")
    producer.create_topic(topic, queues=1)
    order = {"order_id": "o-1", "user": "alice", "amount_cents": 1250, "tags": ["a", "é"]}

    result = producer.send(topic, order)

    [message] = producer.read(topic, 0, result.queue_offset, max=1).messages
    assert message.body_encoding == "utf-8"
    assert message_json(message) == order


def test_a_ready_outgoing_message_keeps_its_own_uniq_key(producer: Producer) -> None:
    topic = unique("SDK_READY")
    producer.create_topic(topic, queues=1)
    message = OutgoingMessage(body="x", properties={UNIQ_KEY: "MY-OWN-KEY"})

    result = producer.send(topic, message)

    assert result.msg_id == "MY-OWN-KEY"
    assert message.properties == {UNIQ_KEY: "MY-OWN-KEY"}


def test_sending_to_a_system_topic_raises_system_topic_forbidden_which_is_not_retriable(producer: Producer) -> None:
    with pytest.raises(SystemTopicForbidden) as caught:
        producer.send("RMQ_SYS_TRANS_HALF_TOPIC", "sneaky")
    assert caught.value.retriable is False
    assert caught.value.status == 403


def test_a_closed_port_raises_broker_unavailable_which_is_retriable() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with Producer(f"http://127.0.0.1:{port}", timeout=2.0, retries=1) as p, pytest.raises(BrokerUnavailable) as caught:
        p.send("ANY", "x")
    assert caught.value.retriable is True


async def test_sixty_four_concurrent_async_sends_all_succeed_at_distinct_offsets(broker_url: str) -> None:
    topic = unique("SDK_ASYNC")
    async with AsyncProducer(broker_url) as producer:
        await producer.create_topic(topic, queues=4)

        results = await asyncio.gather(*(producer.send(topic, {"n": i}) for i in range(64)))

        assert all(r.status is SendStatus.SEND_OK for r in results)
        assert len({(r.queue_id, r.queue_offset) for r in results}) == 64
        assert len({r.commit_log_offset for r in results}) == 64
        assert len({r.msg_id for r in results}) == 64
        info = await producer.get_topic(topic)
        assert sum(q.max_offset - q.min_offset for q in info.queues) == 64
