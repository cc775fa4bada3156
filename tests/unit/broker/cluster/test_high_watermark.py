"""The high watermark: how far consumers of a set may read (pure decision, tracker, and the leader's store)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from halfmq.broker.cluster.decisions import FollowerProgress, high_watermark, in_sync_set
from halfmq.broker.cluster.high_watermark import HighWatermark
from halfmq.broker.cluster.replica_tracker import ReplicaTracker
from halfmq.broker.store.message_store import MessageStore, PutItem, StoreConfig
from tests.support.fake_clock import FakeClock

ALL = frozenset({"n1", "n2", "n3"})


def progress(**durable: int) -> dict[str, FollowerProgress]:
    return {node: FollowerProgress(end, 100.0) for node, end in durable.items()}


def test_the_mark_is_how_far_a_majority_of_the_in_sync_nodes_has_the_log_on_disk_the_leaders_own_included() -> None:
    assert high_watermark(0, "n1", 900, ALL, progress(n2=700, n3=800), 3) == 800
    assert high_watermark(0, "n1", 600, ALL, progress(n2=700, n3=800), 3) == 700  # the leader's own fsync is one vote
    assert high_watermark(0, "n1", 600, ALL, progress(n2=500, n3=550), 3) == 550


def test_a_node_outside_the_in_sync_set_neither_holds_the_mark_back_nor_moves_it() -> None:
    assert high_watermark(0, "n1", 900, frozenset({"n1", "n2"}), progress(n2=800, n3=5), 3) == 800
    assert high_watermark(0, "n1", 900, frozenset({"n1", "n2"}), progress(n2=700, n3=900), 3) == 700


def test_followers_that_have_not_reported_hold_the_mark_at_where_it_was() -> None:
    assert high_watermark(0, "n1", 900, ALL, progress(n2=800), 3) == 800  # the leader and n2 are a majority
    assert high_watermark(0, "n1", 900, ALL, progress(), 3) == 0
    assert high_watermark(450, "n1", 900, ALL, progress(), 3) == 450


def test_the_mark_never_moves_back() -> None:
    assert high_watermark(850, "n1", 900, ALL, progress(n2=700, n3=800), 3) == 850


def test_a_caught_up_follower_rejoins_the_in_sync_set_only_once_it_has_the_mark_on_disk() -> None:
    current = frozenset({"n1", "n2"})
    behind = {"n2": FollowerProgress(800, 100.0), "n3": FollowerProgress(600, 99.5)}
    assert in_sync_set("n1", current, behind, 100.0, 2.0, 3, high_watermark=700) == current
    caught_up = {**behind, "n3": FollowerProgress(700, 99.5)}
    assert in_sync_set("n1", current, caught_up, 100.0, 2.0, 3, high_watermark=700) == ALL


@pytest.fixture
def store(tmp_path: Path):
    s = MessageStore(StoreConfig(tmp_path))
    s.create_topic("T", 1)
    yield s
    s.close()


def put(store: MessageStore, body: str) -> int:
    return store.put([PutItem("T", 0, body.encode())])[1]


async def test_a_leaders_consumers_see_a_message_once_a_majority_in_sync_has_it_on_disk(store: MessageStore) -> None:
    watermark: HighWatermark
    tracker = ReplicaTracker("n1", 3, lag_time=2.0, clock=FakeClock(), on_change=lambda: watermark.advance())
    watermark = HighWatermark(tracker, lambda: store)
    tracker.reset(ALL)
    watermark.lead(store)
    end = put(store, "m")
    await asyncio.wrap_future(store.wait_flushed(end))  # the leader's own fsync (ack=leader answers here)
    watermark.advance()
    assert store.visible.read_queue("T", 0, 0, 10) == []  # the leader alone is no majority
    tracker.report("n2", end, leader_end=end)
    assert [m.body for m in store.visible.read_queue("T", 0, 0, 10)] == [b"m"]  # n3 is not waited for


async def test_a_write_no_send_waits_for_gets_the_leaders_fsync_once_the_followers_have_it(store: MessageStore) -> None:
    watermark: HighWatermark
    tracker = ReplicaTracker("n1", 3, lag_time=2.0, clock=FakeClock(), on_change=lambda: watermark.advance())
    watermark = HighWatermark(tracker, lambda: store)
    tracker.reset(ALL)
    watermark.lead(store)
    end = put(store, "a DLQ move")  # nobody awaits its fsync
    revealed = asyncio.Event()
    store.visible.add_listener(lambda topic, queue_id: revealed.set())
    tracker.report("n2", end, leader_end=end)
    await asyncio.wait_for(revealed.wait(), 10)  # once the fsync the mark asked for is done; a hang guard, not a measurement
    assert store.visible.bound == end and store.flushed_offset >= end


def test_a_new_leader_starts_showing_the_log_at_the_mark_it_heard_as_a_follower(store: MessageStore) -> None:
    end = put(store, "acknowledged by the last term")
    tracker = ReplicaTracker("n2", 3, lag_time=2.0, clock=FakeClock())
    watermark = HighWatermark(tracker, lambda: store)
    tracker.reset(ALL, lagging="n1", high_watermark=end)
    put(store, "not yet")
    watermark.lead(store)
    assert [m.body for m in store.visible.read_queue("T", 0, 0, 10)] == [b"acknowledged by the last term"]
