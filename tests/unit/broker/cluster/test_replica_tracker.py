"""The leader's replica tracker: quorum waits, in-sync changes, a new term's starting set (fake clock)."""

from __future__ import annotations

import asyncio

import pytest

from halfmq.broker.cluster.errors import FlushSlaveTimeout, SlaveNotAvailable
from halfmq.broker.cluster.replica_tracker import ReplicaTracker
from tests.support.fake_clock import FakeClock
from tests.support.loop_steps import run_ready


async def test_a_quorum_write_is_acknowledged_once_the_leader_and_one_follower_have_it_on_disk_while_the_third_is_stopped() -> None:
    tracker = ReplicaTracker("n1", 3, lag_time=2.0, clock=FakeClock())
    tracker.reset(frozenset({"n1", "n2", "n3"}))
    waiting = asyncio.ensure_future(tracker.wait(500, seconds=5))
    await run_ready()
    assert not waiting.done()  # the leader's own fsync alone is no majority
    tracker.report("n2", 500, leader_end=500)
    await asyncio.wait_for(waiting, 1)  # n3 (stopped) never reported, and is still in the published set
    assert tracker.acknowledged_mark == 500


async def test_while_a_new_in_sync_set_is_published_only_members_of_both_acknowledge() -> None:
    tracker = ReplicaTracker("n1", 3, lag_time=2.0, clock=FakeClock())
    tracker.reset(frozenset({"n1", "n2", "n3"}))
    tracker.publishing(frozenset({"n1", "n2"}))  # etcd may hold either set until the put answers
    waiting = asyncio.ensure_future(tracker.wait(500, seconds=5))
    tracker.report("n3", 500, leader_end=500)
    await run_ready()
    assert not waiting.done()  # n3 leaves in the set being written: it may not hold an acknowledged write alone
    tracker.published(frozenset({"n1", "n2"}))
    tracker.report("n2", 500, leader_end=500)
    await asyncio.wait_for(waiting, 1)


def test_a_report_below_the_last_one_from_the_same_follower_changes_nothing() -> None:
    tracker = ReplicaTracker("n1", 3, lag_time=2.0, clock=FakeClock())
    tracker.reset(frozenset({"n1", "n2", "n3"}))
    tracker.report("n2", 500, leader_end=600)
    tracker.report("n2", 300, leader_end=600)
    assert tracker.progress["n2"].durable == 500


def test_a_new_leader_counts_nothing_before_a_majority_has_its_terms_start_and_keeps_the_old_leader_until_then() -> None:
    clock = FakeClock()
    tracker = ReplicaTracker("n2", 3, lag_time=2.0, clock=clock)
    tracker.reset(frozenset({"n1", "n2", "n3"}), lagging="n1", term_start=800)  # n1 may have acknowledged up to 800
    tracker.advance(800)
    tracker.report("n3", 700, leader_end=800)
    assert tracker.acknowledged(800) == 0 and tracker.high_watermark == 0
    assert tracker.wanted_in_sync() == frozenset({"n1", "n2", "n3"})  # without n1, only n2 would hold 700..800
    tracker.report("n3", 800, leader_end=800)
    assert tracker.acknowledged(800) == 800 and tracker.advance(800) == 800
    assert tracker.wanted_in_sync() == frozenset({"n2", "n3"})


async def test_without_a_majority_in_sync_a_send_is_refused_at_once_and_a_slow_one_times_out() -> None:
    tracker = ReplicaTracker("n1", 3, lag_time=2.0, clock=FakeClock())
    with pytest.raises(SlaveNotAvailable):
        await tracker.wait(10, seconds=5)
    tracker.reset(frozenset({"n1", "n2"}))
    with pytest.raises(FlushSlaveTimeout):
        await tracker.wait(10, seconds=0.05)


def test_a_new_leader_drops_the_old_one_at_once_but_keeps_a_majority() -> None:
    clock = FakeClock()
    tracker = ReplicaTracker("n2", 3, lag_time=2.0, clock=clock)
    tracker.reset(frozenset({"n1", "n2", "n3"}), lagging="n1")
    assert tracker.wanted_in_sync() == frozenset({"n2", "n3"})
    clock.now += 10  # n3 never reported either: the set keeps it rather than shrink below a majority
    assert tracker.wanted_in_sync() == frozenset({"n2", "n3"})


def test_a_follower_that_fetches_everything_the_leader_had_at_its_last_fetch_stays_caught_up_under_steady_load() -> None:
    clock = FakeClock()
    tracker = ReplicaTracker("n1", 3, lag_time=2.0, clock=clock)
    tracker.reset(frozenset({"n1", "n2", "n3"}))
    tracker.report("n2", 100, leader_end=150)  # first fetch: behind the end
    for end in range(200, 2000, 50):  # every fetch asks from where the log ended at the one before; new writes keep coming
        clock.now += 0.5
        tracker.report("n2", end - 50, leader_end=end)
        tracker.report("n3", 100, leader_end=end)  # n3 is stuck
    assert tracker.progress["n2"].caught_up_at == clock.now
    assert tracker.wanted_in_sync() == frozenset({"n1", "n2"})


async def test_a_quorum_write_is_acknowledged_once_both_followers_have_it_on_disk_while_the_leaders_own_fsync_still_runs() -> None:
    tracker = ReplicaTracker("n1", 3, lag_time=2.0, clock=FakeClock())
    tracker.reset(frozenset({"n1", "n2", "n3"}))
    fsync: asyncio.Future[None] = asyncio.get_running_loop().create_future()  # the leader's slow disk
    waiting = asyncio.ensure_future(tracker.wait(500, seconds=5, local=fsync))
    tracker.report("n2", 500, leader_end=500)
    tracker.report("n3", 500, leader_end=500)
    await asyncio.wait_for(waiting, 1)
    assert not fsync.done() and tracker.leader_durable == 0


async def test_one_follower_is_no_majority_while_the_leaders_fsync_runs_and_the_leaders_fsync_counts_as_a_vote_when_it_completes() -> None:
    tracker = ReplicaTracker("n1", 3, lag_time=2.0, clock=FakeClock())
    tracker.reset(frozenset({"n1", "n2", "n3"}))
    fsync: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    waiting = asyncio.ensure_future(tracker.wait(500, seconds=5, local=fsync))
    tracker.report("n2", 500, leader_end=500)
    await run_ready()
    assert not waiting.done()  # only n2 has it on disk
    fsync.set_result(None)
    await asyncio.wait_for(waiting, 1)
    assert tracker.leader_durable == 500 and tracker.acknowledged_mark == 500


async def test_a_failed_leader_fsync_fails_a_quorum_write_no_majority_has_yet() -> None:
    tracker = ReplicaTracker("n1", 3, lag_time=2.0, clock=FakeClock())
    tracker.reset(frozenset({"n1", "n2", "n3"}))
    fsync: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    waiting = asyncio.ensure_future(tracker.wait(500, seconds=5, local=fsync))
    await asyncio.sleep(0)
    fsync.set_exception(OSError("disk gone"))
    with pytest.raises(OSError):
        await asyncio.wait_for(waiting, 1)
    assert tracker.leader_durable == 0


async def test_a_leader_fsync_asked_in_an_earlier_term_does_not_vote_in_the_next() -> None:
    tracker = ReplicaTracker("n1", 3, lag_time=2.0, clock=FakeClock())
    tracker.reset(frozenset({"n1", "n2", "n3"}))
    fsync: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    with pytest.raises(FlushSlaveTimeout):
        await tracker.wait(500, seconds=0.01, local=fsync)
    tracker.reset(frozenset({"n1", "n2", "n3"}))  # a new term (this node stepped down and was elected again)
    fsync.set_result(None)
    await asyncio.sleep(0)
    assert tracker.leader_durable == 0


def test_a_leader_is_out_of_touch_once_no_follower_has_fetched_within_the_window_and_back_in_touch_at_one_fetch() -> None:
    clock = FakeClock()
    tracker = ReplicaTracker("n1", 3, lag_time=2.0, clock=clock)
    tracker.reset(frozenset({"n1", "n2", "n3"}))
    clock.now += 5.9
    assert not tracker.out_of_touch(6.0)  # a new term counts its followers as heard when it starts
    tracker.report("n2", 0, leader_end=0)
    clock.now += 5.0
    assert not tracker.out_of_touch(6.0)  # n2 fetched 5 s ago: with the leader, a majority of 3
    clock.now += 1.5
    assert tracker.out_of_touch(6.0)  # nobody for 6.5 s: cut off from both followers
    tracker.report("n3", 10, leader_end=10)
    assert not tracker.out_of_touch(6.0)  # an ack on n3's stream is contact too


def test_in_a_set_of_five_one_follower_in_touch_is_not_enough() -> None:
    clock = FakeClock()
    tracker = ReplicaTracker("n1", 5, lag_time=2.0, clock=clock)
    tracker.reset(frozenset({"n1", "n2", "n3", "n4", "n5"}))
    clock.now += 10
    tracker.report("n2", 0, leader_end=0)
    assert tracker.out_of_touch(6.0)
    tracker.report("n3", 0, leader_end=0)
    assert not tracker.out_of_touch(6.0)
