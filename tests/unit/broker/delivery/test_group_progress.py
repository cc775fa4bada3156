"""Every group's progress on its topics, on a real store: opened from committed offsets, settled into them."""

from __future__ import annotations

from pathlib import Path

import pytest

from halfmq.broker.delivery.group_progress import GroupProgress
from halfmq.broker.delivery.receipt_handle import ReceiptHandle
from halfmq.broker.store.message_store import MessageStore, PutItem, StoreConfig
from halfmq.errors import TopicNotFound

EPOCH = "e1"


@pytest.fixture
def store(tmp_path: Path):
    s = MessageStore(StoreConfig(tmp_path))
    s.create_topic("T", 2)
    s.put([PutItem("T", 0, b"%d" % i) for i in range(4)])
    yield s
    s.close()


@pytest.fixture
def woken() -> list[str]:
    return []


@pytest.fixture
def progress(store: MessageStore, woken: list[str]) -> GroupProgress:
    return GroupProgress(store, 100, EPOCH, woken.append)


def test_a_group_begins_at_its_committed_offsets_and_elsewhere_at_the_queue_s_first(store: MessageStore, progress: GroupProgress) -> None:
    store.offsets.commit("g", "T", 0, 3)
    state = progress.open("g", "T")
    assert [q.committed for q in state.queues] == [3, 0]
    assert progress.open("g", "T") is state


def test_a_topic_that_does_not_exist_has_no_progress(progress: GroupProgress) -> None:
    with pytest.raises(TopicNotFound):
        progress.open("g", "NOPE")
    assert progress.find("g", "NOPE") is None


def test_positions_read_a_group_without_beginning_it_so_naming_groups_grows_nothing(store: MessageStore,
                                                                                   progress: GroupProgress) -> None:
    store.offsets.commit("g", "T", 0, 3)
    for i in range(1000):  # a dry run or a Kafka OffsetFetch may name any group
        assert progress.positions(f"never-{i}", "T") == [(0, 0, 0), (1, 0, 0)]
    assert progress.positions("g", "T") == [(0, 3, 0), (1, 0, 0)]
    assert len(progress.states) == 0
    state = progress.open("g", "T")
    state.queues[1].deliver_new(1000.0, 30)
    assert progress.positions("g", "T") == [(0, 3, 0), (1, 0, 1)]  # a begun group's own progress, its deliveries held


def test_settling_commits_only_the_contiguous_offsets(store: MessageStore, progress: GroupProgress) -> None:
    queue = progress.open("g", "T").queues[0]
    progress.settle("g", "T", 0, queue, 1)
    assert store.offsets.get("g", "T", 0) is None  # offset 0 is still out
    progress.settle("g", "T", 0, queue, 0)
    assert store.offsets.get("g", "T", 0) == 2
    assert progress.settled() == [("g", "T", 0, 2, ()), ("g", "T", 1, 0, ())]


def test_a_receipt_holds_only_its_own_delivery_of_this_runtime(progress: GroupProgress) -> None:
    state = progress.open("g", "T")
    item = state.queues[0].deliver_new(1000.0, 30)
    assert progress.holding(state, ReceiptHandle("g", "T", 0, item.offset, item.nonce, EPOCH)) is state.queues[0]
    assert progress.holding(state, ReceiptHandle("g", "T", 0, item.offset, item.nonce + 1, EPOCH)) is None  # redelivered since
    assert progress.holding(state, ReceiptHandle("g", "T", 0, item.offset, item.nonce, "before a restart")) is None
    assert progress.holding(state, ReceiptHandle("g", "T", 5, item.offset, item.nonce, EPOCH)) is None
    assert progress.holding(None, ReceiptHandle("g", "T", 0, item.offset, item.nonce, EPOCH)) is None


def test_an_ack_read_back_from_the_log_settles_and_one_of_a_topic_gone_is_passed_over(progress: GroupProgress) -> None:
    progress.restore_acked("g", "T", 0, 0)
    progress.restore_acked("g", "GONE", 0, 0)
    progress.restore_acked("g", "T", 9, 0)  # a queue the topic does not have
    assert progress.settled() == [("g", "T", 0, 1, ()), ("g", "T", 1, 0, ())]


def test_a_settle_that_readies_a_message_group_s_next_message_wakes_the_topic(store: MessageStore, progress: GroupProgress,
                                                                                woken: list[str]) -> None:
    queue = progress.open("g", "T").queues[0]
    head = queue.deliver_next(1000.0, 30, "order-1")
    assert head is not None and queue.deliver_next(1000.0, 30, "order-1") is None  # waits behind its group's head
    progress.settle("g", "T", 0, queue, head.offset)
    assert woken == ["T"]
