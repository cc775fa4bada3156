"""The journal: deliveries and nacks as records of RMQ_SYS_JOURNAL, found by each message's place."""

from __future__ import annotations

from pathlib import Path

import pytest

from halfmq.broker.delivery import journal
from halfmq.broker.delivery.delivery_service import DeliveryPolicy, DeliveryService
from halfmq.broker.store.message_store import MessageStore, PutItem, StoreConfig
from halfmq.broker.store.state_records import decode_acks
from halfmq.broker.store.topics import TXN_STATE_TOPIC


@pytest.fixture
def store(tmp_path: Path):
    s = MessageStore(StoreConfig(tmp_path, index_slots=1024, index_entries=4096))
    s.create_topic("T", 1)
    yield s
    s.close()


@pytest.fixture
def service(store: MessageStore) -> DeliveryService:
    return DeliveryService(store, DeliveryPolicy(max_reconsume_times=3, retry_delays=(0, 0)), lambda: 1000.0)


def journal_lines(store: MessageStore) -> list:
    return store.reads.read_queue(journal.JOURNAL_TOPIC, 0, 0, 100)


async def test_a_receive_of_32_writes_one_journal_record_naming_each_delivery_and_its_attempt(service, store) -> None:
    store.put([PutItem("T", 0, f"m{i}".encode()) for i in range(32)])
    out = await service.receive("g", "T", 32, 30, 0)
    assert len(out) == 32
    [line] = journal_lines(store)
    assert line.properties[journal.JOURNAL] == journal.DELIVERED and line.properties[journal.CONSUMER_GROUP] == "g"
    assert journal.entries_of(line.body) == [("T", 0, i, 1) for i in range(32)]
    assert [m.body for m in store.keys.query(journal.JOURNAL_TOPIC, "T/0@7")] == [line.body]  # found by the message's place


async def test_a_nack_s_reason_is_in_the_log(service, store) -> None:
    store.put([PutItem("T", 0, b"m")])
    [delivery] = await service.receive("g", "T", 1, 30, 0)
    assert service.nack("g", "T", [delivery.receipt_handle], reason="db down") == [(delivery.receipt_handle, True)]
    [_, nacked] = journal_lines(store)
    assert nacked.properties[journal.JOURNAL] == journal.NACKED and nacked.properties[journal.NACK_REASON] == "db down"
    assert journal.entries_of(nacked.body) == [("T", 0, 0, 1)]
    [again] = await service.receive("g", "T", 1, 30, 0)
    assert again.delivery_attempt == 2 and journal.entries_of(journal_lines(store)[-1].body) == [("T", 0, 0, 2)]


async def test_a_receive_that_hands_out_nothing_writes_nothing(service, store) -> None:
    assert await service.receive("g", "T", 32, 30, 0) == []
    assert store.topic(journal.JOURNAL_TOPIC) is None


def acks_by_place(store: MessageStore, place: str) -> list:
    return [r for r in store.keys.query(TXN_STATE_TOPIC, place)]


async def test_with_the_journal_on_an_ack_is_found_by_the_message_s_place(service, store) -> None:
    store.put([PutItem("T", 0, b"m")])
    [delivery] = await service.receive("g", "T", 1, 30, 0)
    service.ack("g", "T", [delivery.receipt_handle])
    [acked] = acks_by_place(store, "T/0@0")
    assert decode_acks(acked.body) == [("g", "T", 0, 0)]


async def test_with_the_journal_off_a_receive_a_nack_and_an_ack_write_no_journal_record_and_index_no_ack(store) -> None:
    off = DeliveryService(store, DeliveryPolicy(max_reconsume_times=3, retry_delays=(0, 0), journal=False), lambda: 1000.0)
    store.put([PutItem("T", 0, b"m")])
    [first] = await off.receive("g", "T", 1, 30, 0)
    assert off.nack("g", "T", [first.receipt_handle], reason="db down") == [(first.receipt_handle, True)]
    [again] = await off.receive("g", "T", 1, 30, 0)
    assert again.delivery_attempt == 2  # delivery itself is the same
    off.ack("g", "T", [again.receipt_handle])
    assert store.topic(journal.JOURNAL_TOPIC) is None
    assert acks_by_place(store, "T/0@0") == []
    assert store.offsets.get("g", "T", 0) == 1  # the ack itself is kept: the group's offset moved past the message
