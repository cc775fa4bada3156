"""The send options, defined once (``SendOptions``), behave the same on every send path."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from halfmq import AsyncProducer, AsyncTransactionProducer, OutgoingMessage, Producer, TransactionProducer
from halfmq.client.messages import UNIQ_KEY, outgoing
from halfmq.wire import to_wire

CLOSED = "http://127.0.0.1:9"  # every call below is refused before a request is made


class Listener:
    def execute_local_transaction(self, msg: Any, arg: Any) -> None:
        return None

    def check_local_transaction(self, msg: Any) -> None:
        return None


def test_the_options_become_the_fields_of_the_message() -> None:
    msg = outgoing({"id": 7}, keys=["order-7"], tag="created", properties={"p": "1"}, queue_id=1, sharding_key="7")
    assert (msg.keys, msg.tag, msg.queue_id, msg.sharding_key) == (["order-7"], "created", 1, "7")
    assert msg.properties["p"] == "1" and msg.properties[UNIQ_KEY]
    assert msg.body == '{"id":7}'


def test_options_beside_a_ready_message_are_refused() -> None:
    with pytest.raises(TypeError, match="inside the OutgoingMessage"):
        outgoing(OutgoingMessage(body="x"), tag="t")


def test_a_misspelt_option_is_a_type_error_naming_it_on_every_send_path() -> None:
    with Producer(CLOSED, retries=0) as producer, pytest.raises(TypeError, match="'tags'.*sharding_key"):
        producer.send("T", "body", tags="t")  # type: ignore[call-arg]
    with TransactionProducer(CLOSED, "pg", Listener(), check_backs=False) as tx, pytest.raises(TypeError, match="'tags'"):
        tx.send_in_transaction("T", "body", None, tags="t")  # type: ignore[call-arg]

    async def async_paths() -> None:
        async with AsyncProducer(CLOSED, retries=0) as producer:
            with pytest.raises(TypeError, match="'tags'"):
                await producer.send("T", "body", tags="t")  # type: ignore[call-arg]
        async with AsyncTransactionProducer(CLOSED, "pg", Listener(), check_backs=False) as tx:
            with pytest.raises(TypeError, match="'tags'"):
                await tx.send_in_transaction("T", "body", tags="t")  # type: ignore[call-arg]

    asyncio.run(async_paths())


def test_a_message_group_goes_on_the_wire_as_message_group() -> None:
    from halfmq.wire import to_wire

    assert to_wire(outgoing("body", message_group="u1"))["message_group"] == "u1"
    assert "message_group" not in to_wire(outgoing("body"))


def test_a_delay_and_a_delivery_time_become_milliseconds_on_the_wire() -> None:
    assert to_wire(outgoing("x", delay=30))["delay_ms"] == 30_000
    assert outgoing("x", delay=timedelta(milliseconds=1500)).delay_ms == 1_500
    assert outgoing("x", deliver_at=1_800_000_000.25).deliver_at_ms == 1_800_000_000_250
    assert outgoing("x", deliver_at=datetime(2027, 1, 15, tzinfo=UTC)).deliver_at_ms == 1_799_971_200_000
    with pytest.raises(ValueError, match="aware datetime"):
        outgoing("x", deliver_at=datetime(2027, 1, 15))
    with pytest.raises(ValueError, match="not both"):
        outgoing("x", delay=1, deliver_at=1_800_000_000)


def test_halfmq_outgoing_builds_a_ready_message_with_send_s_spelling_delay_in_seconds() -> None:
    from halfmq import outgoing as public_outgoing

    msg = public_outgoing({"order_id": "o1"}, delay=30 * 60, message_group="u1")
    assert (msg.delay_ms, msg.message_group) == (30 * 60 * 1000, "u1")


def test_a_topic_name_the_broker_would_refuse_is_refused_before_any_request_on_every_send_path() -> None:
    from halfmq import InvalidTopicName

    with Producer(CLOSED, retries=0) as producer:
        with pytest.raises(InvalidTopicName, match="'a/b'.*A-Z a-z 0-9 _ -"):
            producer.send("a/b", "body")
        with pytest.raises(InvalidTopicName):
            producer.send_batch("a/b", ["body"])
    with TransactionProducer(CLOSED, "pg", Listener(), check_backs=False) as tx:
        with pytest.raises(InvalidTopicName):
            tx.send_in_transaction("a/b", "body")
        with pytest.raises(InvalidTopicName):
            tx.send_in_transaction("T", "body", also=[("a/b", "companion")])
