"""The timer index is a function of the log: what it says is due, and that a rebuild or a follower agrees."""

from __future__ import annotations

import asyncio
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from halfmq.broker.store.message_store import MessageStore, PutItem, StoreConfig
from halfmq.broker.store.topics import TIMER_TOPIC
from halfmq.broker.timers.release_service import ReleaseService
from halfmq.broker.timers.routing import TIMER_DELIVER_MS, route_all
from halfmq.broker.timers.timer_index import TimerIndex

from ..half_messages.fakes import FakeClock

NOW = 1_800_000_000_000


async def _durable(offset: int) -> None:
    return None


def _store(path: Path, clock: FakeClock | None = None) -> MessageStore:
    store = MessageStore(StoreConfig(data_dir=path, checkpoint_interval=60), clock=clock or FakeClock())
    store.create_topic("ORDERS", 2)
    return store


def _send(store: MessageStore, key: str, due_ms: int, queue: int = 0) -> None:
    item = PutItem("ORDERS", queue, key.encode(), {"UNIQ_KEY": key, TIMER_DELIVER_MS: str(due_ms)})
    store.put(route_all(store, [item], NOW, None))


def _visible(store: MessageStore) -> list[str]:
    return [m.properties["UNIQ_KEY"] for q in range(2) for m in store.read_queue("ORDERS", q, 0, 1000)]


def test_nothing_is_due_one_millisecond_before_its_time(tmp_path: Path) -> None:
    store = _store(tmp_path)
    try:
        index = TimerIndex(store)
        _send(store, "a", NOW + 1_000)
        _send(store, "b", NOW + 500)
        assert index.due(NOW + 499, 10) == []
        assert index.due(NOW + 500, 10) == [(NOW + 500, 1)]
        assert index.due(NOW + 999, 10) == [(NOW + 500, 1)]
        assert index.due(NOW + 1_000, 10) == [(NOW + 500, 1), (NOW + 1_000, 0)]
        assert index.due(NOW + 1_000, 1) == [(NOW + 500, 1)]
        assert (index.next_due(), index.pending) == (NOW + 500, 2)
    finally:
        store.close()


def test_a_release_and_its_marker_are_one_write_group_and_the_index_learns_it_from_the_marker(tmp_path: Path) -> None:
    clock = FakeClock(NOW / 1000)
    store = _store(tmp_path, clock)
    try:
        index = TimerIndex(store)
        _send(store, "a", NOW + 1_000, queue=1)
        _send(store, "b", NOW + 2_000)
        clock.advance(1.5)
        lateness: list[float] = []
        service = ReleaseService(store, index, _durable, clock=clock, on_released=lateness.append)
        released = asyncio.run(service.release(index.due(int(clock() * 1000), 10)))
        assert [(r.topic, r.queue_id) for r in released] == [("ORDERS", 1)]
        assert _visible(store) == ["a"]
        [message] = store.read_queue("ORDERS", 1, 0, 10)
        [marker] = store.read_queue(TIMER_TOPIC, 1, 0, 10)
        assert message.group_more and not marker.group_more  # written as one group: the message, then its marker
        assert marker.commit_log_offset == message.commit_log_offset + message.size
        assert lateness == [0.5]
        assert (index.pending, index.next_due(), index.due(NOW + 1_999, 10)) == (1, NOW + 2_000, [])
    finally:
        store.close()


def test_a_sooner_timer_wakes_the_release_loop(tmp_path: Path) -> None:
    store = _store(tmp_path)
    try:
        index = TimerIndex(store)
        woken: list[bool] = []
        index.on_sooner = lambda: woken.append(True)
        _send(store, "late", NOW + 9_000)
        _send(store, "later", NOW + 10_000)
        _send(store, "soon", NOW + 1_000)
        assert woken == [True, True]
    finally:
        store.close()


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5_000), st.booleans()), min_size=1, max_size=40), st.randoms(use_true_random=False))
def test_the_index_rebuilt_from_the_log_equals_the_index_built_live(tmp_path_factory, plan, rnd) -> None:
    path = tmp_path_factory.mktemp("index")
    leader = _store(path / "leader", FakeClock(NOW / 1000))
    follower = _store(path / "follower")
    try:
        live = TimerIndex(leader)
        following = TimerIndex(follower)
        service = ReleaseService(leader, live, _durable, clock=lambda: (NOW + 5_000) / 1000)
        for i, (delay, release_now) in enumerate(plan):
            _send(leader, f"m{i}", NOW + delay, queue=i % 2)
            if release_now:
                due = live.due(NOW + rnd.randint(0, 5_000), rnd.randint(1, 5))
                if due:
                    asyncio.run(service.release(due))
        follower.append_replicated(leader.commit_log.read(0, leader.commit_log.end_offset), 0)
        everything = NOW + 10_000
        expected = live.due(everything, 1_000)
        assert following.due(everything, 1_000) == expected
        leader.close()
        reopened = _store(path / "leader")
        try:
            assert TimerIndex(reopened).due(everything, 1_000) == expected
        finally:
            reopened.close()
    finally:
        leader.close()
        follower.close()
