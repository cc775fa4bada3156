"""Acks held by open producer transactions, on a real store's group progress with a fake clock."""

from __future__ import annotations

from pathlib import Path

import pytest

from halfmq.broker.delivery.group_progress import GroupProgress
from halfmq.broker.delivery.held_acks import HeldAcks
from halfmq.broker.delivery.queue_progress import HELD_BY_TRANSACTION
from halfmq.broker.delivery.receipt_handle import ReceiptHandle
from halfmq.broker.store.message_store import MessageStore, PutItem, StoreConfig
from halfmq.errors import ReceiptInOtherTransaction, ReceiptNotHeld
from tests.support.fake_clock import FakeClock

EPOCH = "e1"


class Parts:
    """Held acks over a group's progress on T (2 messages in queue 0), with what they wake and count."""

    def __init__(self, store: MessageStore) -> None:
        self.clock = FakeClock(1000.0)
        self.woken: list[str] = []
        self.counted: list[ReceiptHandle] = []
        self.progress = GroupProgress(store, 100, EPOCH, self.woken.append)
        self.held = HeldAcks(self.progress, self.clock, self.woken.append, self.counted.append)

    def deliver(self, epoch: str = EPOCH) -> ReceiptHandle:
        """Hand out T/0's next message to group g, as a receive does; its receipt."""
        item = self.progress.open("g", "T").queues[0].deliver_new(self.clock(), 30)
        return ReceiptHandle("g", "T", 0, item.offset, item.nonce, epoch)


@pytest.fixture
def parts(tmp_path: Path):
    store = MessageStore(StoreConfig(tmp_path))
    store.create_topic("T", 1)
    store.put([PutItem("T", 0, b"a"), PutItem("T", 0, b"b")])
    yield Parts(store)
    store.close()


def test_a_receipt_that_names_no_delivery_in_flight_is_not_held_and_nothing_changes(parts: Parts) -> None:
    held = parts.deliver()
    never_handed_out = ReceiptHandle("g", "T", 0, 1, 99, EPOCH)
    with pytest.raises(ReceiptNotHeld):
        parts.held.hold([held, never_handed_out])
    assert not parts.held.is_held(parts.progress.find("g", "T"), held)


def test_a_receipt_of_another_runtime_is_not_held(parts: Parts) -> None:
    with pytest.raises(ReceiptNotHeld):
        parts.held.check_held([parts.deliver(epoch="before a restart")])


def test_a_held_delivery_stays_invisible_past_its_invisible_time_and_refuses_a_plain_ack(parts: Parts) -> None:
    h = parts.deliver()
    parts.held.hold([h])
    state = parts.progress.find("g", "T")
    assert state is not None and state.queues[0].in_flight[h.offset].visible_at == HELD_BY_TRANSACTION
    with pytest.raises(ReceiptInOtherTransaction):
        parts.held.refuse_if_held(state, h)


def test_a_delivery_not_in_a_transaction_is_not_refused(parts: Parts) -> None:
    h = parts.deliver()
    parts.held.refuse_if_held(parts.progress.find("g", "T"), h)


def test_a_commit_settles_the_held_acks_commits_the_offset_and_counts_each_ack(parts: Parts, tmp_path: Path) -> None:
    first, second = parts.deliver(), parts.deliver()
    parts.held.hold([first, second])
    parts.held.settle_held([first, second])
    state = parts.progress.find("g", "T")
    assert state is not None and state.queues[0].committed == 2 and not state.queues[0].in_flight
    assert parts.counted == [first, second]


def test_an_abort_gives_the_deliveries_back_at_once_and_wakes_the_topic_s_long_polls(parts: Parts) -> None:
    h = parts.deliver()
    parts.held.hold([h])
    parts.held.release_held([h])
    state = parts.progress.find("g", "T")
    assert state is not None and state.queues[0].in_flight[h.offset].visible_at == parts.clock()
    assert state.due == [(parts.clock(), 0, h.offset, h.nonce)]
    assert parts.woken == ["T"]
    assert parts.counted == []
