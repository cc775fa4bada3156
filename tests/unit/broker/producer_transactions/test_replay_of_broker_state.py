"""The coordinator's replay rebuilds what a single broker keeps from its records, with no file copied beside the log:
acks (past a gap too), topics, registered producers, the receipt key. That is what a broker set's new leader does."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from halfmq.broker.delivery.delivery_service import DeliveryPolicy, DeliveryService
from halfmq.broker.delivery.receipt_handle import load_or_create_key
from halfmq.broker.half_messages.producer_registry import ProducerRegistry
from halfmq.broker.producer_transactions.coordinator import TransactionCoordinator
from halfmq.broker.store.message_store import MessageStore, PutItem, StoreConfig


@dataclass
class Broker:
    """What the runtime builds for these records, as it builds it (broker/runtime/)."""

    store: MessageStore
    delivery: DeliveryService
    producers: ProducerRegistry


async def _nothing(end: int) -> None:
    return None


@pytest.fixture
def opened(tmp_path: Path) -> Iterator[list[Broker]]:
    brokers: list[Broker] = []
    yield brokers
    for broker in brokers:
        broker.store.close()


def _open(brokers: list[Broker], data: Path) -> Broker:
    store = MessageStore(StoreConfig(data))
    store.log_topics()
    delivery = DeliveryService(store, DeliveryPolicy(), key=load_or_create_key(data / "receipt-key.json"))
    producers = ProducerRegistry(data / "producers.json", 60)
    TransactionCoordinator(store, delivery, _nothing, producers=producers)  # its replay rebuilds the rest
    brokers.append(Broker(store, delivery, producers))
    return brokers[-1]


def _as_a_follower_would_have_it(source: Path, target: Path) -> None:
    """The log and its derived files, without the files a set never copies (offsets, producers, receipt key)."""
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("consumer_offsets.json", "producers.json", "receipt-key.json",
                                                                   "*.lock", "lock"))


async def test_acked_messages_past_a_gap_are_not_delivered_again_by_a_runtime_without_the_offsets_checkpoint(
        tmp_path: Path, opened: list[Broker]) -> None:
    rt = _open(opened, tmp_path / "leader")
    rt.store.create_topic("T", 1)
    rt.store.put([PutItem("T", 0, str(i).encode()) for i in range(5)])
    got = await rt.delivery.receive("g", "T", 5, invisible=30, wait=0)
    answer = rt.delivery.ack("g", "T", [got[i].receipt_handle for i in (0, 1, 3)])  # 2 is not acked: 3 is past a gap
    assert [ok for _, ok in answer] == [True, True, True]
    rt.store.close()
    _as_a_follower_would_have_it(tmp_path / "leader", tmp_path / "follower")
    again = _open(opened, tmp_path / "follower")
    delivered = await again.delivery.receive("g", "T", 10, invisible=30, wait=0)
    assert sorted(d.message.body for d in delivered) == [b"2", b"4"]


async def test_an_empty_topic_and_a_registered_producer_are_known_to_a_runtime_opened_on_the_log(
        tmp_path: Path, opened: list[Broker]) -> None:
    rt = _open(opened, tmp_path / "leader")
    rt.producers.log_to(rt.store)  # what the runtime's start() does: the writer logs registrations
    rt.store.create_topic("EMPTY", 7)
    rt.producers.heartbeat("pg", "c1", "http://127.0.0.1:9/check", "127.0.0.1:9")
    rt.store.close()
    _as_a_follower_would_have_it(tmp_path / "leader", tmp_path / "follower")
    (tmp_path / "follower" / "topics.json").unlink()  # even the topic table: the records say it all
    again = _open(opened, tmp_path / "follower")
    assert again.store.topic("EMPTY") is not None and again.store.topic("EMPTY").queues == 7  # type: ignore[union-attr]
    assert [(e.client_id, e.check_url) for e in again.producers.live("pg")] == [("c1", "http://127.0.0.1:9/check")]


async def test_a_handle_from_before_is_answered_expired_not_invalid_by_a_runtime_with_another_key_file(
        tmp_path: Path, opened: list[Broker]) -> None:
    rt = _open(opened, tmp_path / "leader")
    rt.store.create_topic("T", 1)
    rt.store.put([PutItem("T", 0, b"a")])
    [d] = await rt.delivery.receive("g", "T", 1, invisible=30, wait=0)
    rt.store.close()
    _as_a_follower_would_have_it(tmp_path / "leader", tmp_path / "follower")
    again = _open(opened, tmp_path / "follower")  # makes a key file of its own; the log's key wins
    assert again.delivery.ack("g", "T", [d.receipt_handle]) == [(d.receipt_handle, False)]  # expired (the epoch changed), not
    # INVALID_RECEIPT_HANDLE: at-least-once, the message comes again
    [redelivered] = await again.delivery.receive("g", "T", 1, invisible=30, wait=0)
    assert redelivered.message.body == b"a"


def test_a_follower_has_a_topic_created_on_the_leader_as_soon_as_it_appends_the_record(tmp_path: Path) -> None:
    leader = MessageStore(StoreConfig(tmp_path / "leader"))
    follower = MessageStore(StoreConfig(tmp_path / "follower"))
    try:
        leader.log_topics()
        leader.create_topic("EMPTY", 7)
        follower.append_replicated(leader.commit_log.read(0, leader.commit_log.end_offset), 0)
        assert follower.topic("EMPTY") is not None and follower.topic("EMPTY").queues == 7  # type: ignore[union-attr]
        assert [follower.reads.queue_range("EMPTY", q) for q in range(7)] == [(0, 0)] * 7
    finally:
        leader.close()
        follower.close()
