"""Where is my message, through the SDK (``Producer.journey``, ``Producer.find_messages``, a nack's reason), against
a real broker process (tests/conftest.py's ``start_broker``: nacked messages come back after 0.2 s)."""

from __future__ import annotations

import asyncio
import threading
from datetime import UTC, datetime, timedelta

import pytest

from halfmq.client import AsyncProducer, Consumer, JourneyEventKind, Message, MessageNotFound, Producer
from halfmq.client.simple_consumer import SimpleConsumer
from halfmq.wire import SettleStatus
from tests.support.processes import BrokerProcess
from tests.support.waiting import wait_for

Kind = JourneyEventKind
ORDERS = "ORDERS"


@pytest.fixture
def broker(start_broker) -> BrokerProcess:
    return start_broker()


def nacked_once_then_acked(url: str, reason: str) -> None:
    """The billing group receives the order's message, nacks it with ``reason``, receives it again and acks it."""
    with SimpleConsumer(url, "billing", ORDERS) as consumer:
        [first] = wait_for(lambda: consumer.receive(1, wait_seconds=2), timeout=30)
        assert first.receipt_handle and consumer.nack([first.receipt_handle], reason=reason)[0].status is SettleStatus.OK
        [again] = wait_for(lambda: consumer.receive(1, wait_seconds=2), timeout=30)
        assert again.delivery_attempt == 2 and again.receipt_handle
        assert consumer.ack([again.receipt_handle])[0].status is SettleStatus.OK


def test_the_journey_of_an_order_s_message_shows_sent_delivered_twice_nack_db_down_acked(broker: BrokerProcess) -> None:
    with Producer(broker.url) as producer:
        sent = producer.send(ORDERS, {"order": 42}, keys=["order-42"])
        nacked_once_then_acked(broker.url, "db down")
        journey = producer.journey(sent.msg_id)
    message, events = journey.message, journey.events
    assert (message.msg_id, message.topic, message.queue_id, message.queue_offset) == (sent.msg_id, ORDERS, sent.queue_id, sent.queue_offset)
    assert message.keys == ["order-42"] and message.state == "visible"
    assert [e.kind for e in events] == [Kind.SENT, Kind.DELIVERED, Kind.NACKED, Kind.DELIVERED, Kind.ACKED]
    assert [(e.group, e.attempt) for e in events[1:4]] == [("billing", 1), ("billing", 1), ("billing", 2)]
    assert events[2].detail == "db down"
    assert events[-1].group == "billing" and events[-1].detail is None  # from its acks record, with its time
    times = [e.at_ms for e in events]
    assert None not in times and times == sorted(times)


def test_a_handler_that_raises_is_nacked_with_its_exception_s_class_and_message(broker: BrokerProcess) -> None:
    attempts: list[int] = []

    def handler(message: Message) -> None:
        attempts.append(message.delivery_attempt)
        if message.delivery_attempt == 1:
            raise ValueError("db down")
        consumer.stop()

    with Producer(broker.url) as producer:
        sent = producer.send(ORDERS, {"order": 43}, keys=["order-43"])
        consumer = Consumer(broker.url, "billing", ORDERS, handler, wait_seconds=1)
        running = threading.Thread(target=consumer.run, daemon=True)
        running.start()
        running.join(timeout=60)
        assert not running.is_alive(), "the consumer did not stop after its second delivery"
        consumer.close()
        journey = producer.journey(sent.msg_id)
    assert attempts == [1, 2]
    assert [e.kind for e in journey.events] == [Kind.SENT, Kind.DELIVERED, Kind.NACKED, Kind.DELIVERED, Kind.ACKED]
    assert journey.events[2].detail == "ValueError: db down"


def test_find_by_a_key_lists_every_message_sent_with_it_newest_first(broker: BrokerProcess) -> None:
    with Producer(broker.url) as producer:
        sent = [producer.send(ORDERS, f"event {i}", keys=["user-7", f"event-{i}"]) for i in range(3)]
        producer.send(ORDERS, "someone else", keys=["user-8"])
        assert [m.msg_id for m in producer.find_messages("user-7")] == [s.msg_id for s in reversed(sent)]
        assert [m.msg_id for m in producer.find_messages("event-1")] == [sent[1].msg_id]
        assert [m.msg_id for m in producer.find_messages("user-7", limit=2)] == [sent[2].msg_id, sent[1].msg_id]
        an_hour_ago = datetime.now(UTC) - timedelta(hours=1)
        assert len(producer.find_messages("user-7", since=an_hour_ago)) == 3
        assert producer.find_messages("user-7", since=an_hour_ago.timestamp() + 2 * 3600) == []
        assert producer.find_messages("nobody") == []
        with pytest.raises(ValueError, match="since must be an aware datetime"):
            producer.find_messages("user-7", since=datetime.now())  # a naive datetime: its zone would be a guess


def test_an_unknown_id_raises_message_not_found_in_both_forms(broker: BrokerProcess) -> None:
    with Producer(broker.url) as producer, pytest.raises(MessageNotFound):
        producer.journey("no-such-id")

    async def asked_async() -> None:
        async with AsyncProducer(broker.url) as producer:
            sent = await producer.send(ORDERS, "order 44", keys=["order-44"])
            assert (await producer.journey(sent.msg_id)).events[0].kind is Kind.SENT
            assert [m.msg_id for m in await producer.find_messages("order-44")] == [sent.msg_id]
            with pytest.raises(MessageNotFound):
                await producer.journey("no-such-id")

    asyncio.run(asked_async())


def test_with_the_journal_off_a_journey_shows_the_send_and_the_ack_from_the_group_s_offset(start_broker) -> None:
    broker = start_broker({"HALFMQ_BROKER_JOURNAL": "false"})
    with Producer(broker.url) as producer:
        sent = producer.send(ORDERS, {"order": 45}, keys=["order-45"])
        nacked_once_then_acked(broker.url, "db down")
        journey = producer.journey(sent.msg_id)
    assert [e.kind for e in journey.events] == [Kind.SENT, Kind.ACKED]
    assert (journey.events[-1].group, journey.events[-1].detail) == ("billing", "offset committed")
