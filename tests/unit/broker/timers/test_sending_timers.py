"""A send's timer fields are the one way in: checked at send time, raw timer properties refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from halfmq.broker.messages.send_service import SendService, TopicPolicy, TopicService
from halfmq.broker.store.message_store import MessageStore, StoreConfig
from halfmq.broker.store.topics import TIMER_OUT_MS, TIMER_TOPIC
from halfmq.errors import InvalidDeliveryTime, ReservedProperty
from halfmq.wire import OutgoingMessage

from ..half_messages.fakes import FakeClock

HOUR_MS = 3600 * 1000


@pytest.fixture
def sender(tmp_path: Path):
    clock = FakeClock()
    store = MessageStore(StoreConfig(data_dir=tmp_path, checkpoint_interval=60), clock=clock)
    yield SendService(store, TopicService(store, TopicPolicy()), timer_max_delay_ms=HOUR_MS, clock=clock)
    store.close()


def test_a_delayed_send_is_stored_as_a_timer_and_a_plain_one_beside_it_is_not(sender: SendService) -> None:
    now_ms = int(sender._clock() * 1000)
    results, _ = sender.send("ORDERS", [OutgoingMessage(body="later", delay_ms=30_000), OutgoingMessage(body="now")])
    assert [r.topic for r in results] == [TIMER_TOPIC, "ORDERS"]
    assert results[0].properties[TIMER_OUT_MS] == str(now_ms + 30_000)
    assert sender.store.topic(TIMER_TOPIC) is not None  # created with the first timer, not before


@pytest.mark.parametrize("name", ["TIMER_DELIVER_MS", "TIMER_DELAY_MS", "TIMER_OUT_MS"])
def test_a_raw_timer_property_is_reserved(sender: SendService, name: str) -> None:
    with pytest.raises(ReservedProperty):
        sender.send("ORDERS", [OutgoingMessage(body="x", properties={name: "1"})])


def test_a_delivery_time_past_the_maximum_or_both_fields_are_an_invalid_delivery_time(sender: SendService) -> None:
    now_ms = int(sender._clock() * 1000)
    for message in (OutgoingMessage(body="x", delay_ms=HOUR_MS + 1), OutgoingMessage(body="x", deliver_at_ms=now_ms + HOUR_MS + 1)):
        with pytest.raises(InvalidDeliveryTime):
            sender.send("ORDERS", [message])
    with pytest.raises(InvalidDeliveryTime):  # both fields: refused where the message is built (or its body decoded)
        sender.send("ORDERS", [OutgoingMessage(body="x", delay_ms=1, deliver_at_ms=now_ms + 1)])
    assert sender.store.topic("ORDERS") is None  # refused before anything was created
