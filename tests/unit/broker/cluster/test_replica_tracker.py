"""The leader's replica tracker: quorum waits, in-sync changes, a new term's starting set (fake clock)."""

from __future__ import annotations

import asyncio

import pytest

from halfmq.broker.cluster.errors import FlushSlaveTimeout, SlaveNotAvailable
from halfmq.broker.cluster.replica_tracker import ReplicaTracker


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


async def test_a_quorum_send_returns_once_every_in_sync_follower_reported_it_durable() -> None:
    tracker = ReplicaTracker("n1", 3, lag_time=2.0, clock=Clock())
    tracker.reset(frozenset({"n1", "n2", "n3"}))
    waiting = asyncio.ensure_future(tracker.wait(500, seconds=5))
    await asyncio.sleep(0)
    tracker.report("n2", 500, leader_end=500)
    await asyncio.sleep(0)
    assert not waiting.done()  # n3 is in the published set and has not got it
    tracker.report("n3", 600, leader_end=600)
    await asyncio.wait_for(waiting, 1)


async def test_without_a_majority_in_sync_a_send_is_refused_at_once_and_a_slow_one_times_out() -> None:
    tracker = ReplicaTracker("n1", 3, lag_time=2.0, clock=Clock())
    with pytest.raises(SlaveNotAvailable):
        await tracker.wait(10, seconds=5)
    tracker.reset(frozenset({"n1", "n2"}))
    with pytest.raises(FlushSlaveTimeout):
        await tracker.wait(10, seconds=0.05)


def test_a_new_leader_drops_the_old_one_at_once_but_keeps_a_majority() -> None:
    clock = Clock()
    tracker = ReplicaTracker("n2", 3, lag_time=2.0, clock=clock)
    tracker.reset(frozenset({"n1", "n2", "n3"}), lagging="n1")
    assert tracker.wanted_in_sync() == frozenset({"n2", "n3"})
    clock.now += 10  # n3 never reported either: the set keeps it rather than shrink below a majority
    assert tracker.wanted_in_sync() == frozenset({"n2", "n3"})
