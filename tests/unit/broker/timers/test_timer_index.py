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
    return [m.properties["UNIQ_KEY"] for q in range(2) for m in store.reads.read_queue("ORDERS", q, 0, 1000)]


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
        [message] = store.reads.read_queue("ORDERS", 1, 0, 10)
        [marker] = store.reads.read_queue(TIMER_TOPIC, 1, 0, 10)
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


SMALL_RUNS = {"run_entries": 3, "run_age": 3600.0, "fan_in": 2}  # a run every 3 timers, two runs of a tier merged


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5_000), st.sampled_from(["send", "release", "checkpoint"])), min_size=1, max_size=40),
       st.randoms(use_true_random=False))
def test_the_index_rebuilt_from_the_log_equals_the_index_built_live(tmp_path_factory, plan, rnd) -> None:
    """For any interleaving of timers, releases and checkpoints (runs written, merged, state recorded)."""
    path = tmp_path_factory.mktemp("index")
    leader = _store(path / "leader", FakeClock(NOW / 1000))
    follower = _store(path / "follower")
    try:
        live = TimerIndex(leader, **SMALL_RUNS)
        following = TimerIndex(follower, **SMALL_RUNS)
        service = ReleaseService(leader, live, _durable, clock=lambda: (NOW + 5_000) / 1000)
        for i, (delay, step) in enumerate(plan):
            _send(leader, f"m{i}", NOW + delay, queue=i % 2)
            if step == "release" and (due := live.due(NOW + rnd.randint(0, 5_000), rnd.randint(1, 5))):
                asyncio.run(service.release(due))
            elif step == "checkpoint":
                leader.wait_flushed(leader.commit_log.end_offset).result(5)  # type: ignore[union-attr]
                live.checkpoint()
        follower.append_replicated(leader.commit_log.read(0, leader.commit_log.end_offset), 0)
        everything = NOW + 10_000
        expected = live.due(everything, 1_000)
        assert len(expected) == live.pending
        assert following.due(everything, 1_000) == expected
        leader.close()
        reopened = _store(path / "leader")
        try:
            assert TimerIndex(reopened, **SMALL_RUNS).due(everything, 1_000) == expected
        finally:
            reopened.close()
    finally:
        leader.close()
        follower.close()


def test_a_start_with_100000_pending_timers_reads_fewer_than_65536_queue_entries(tmp_path: Path) -> None:
    store = _store(tmp_path)
    index = TimerIndex(store)
    for batch in range(100):
        items = [PutItem("ORDERS", 0, b"x", {"UNIQ_KEY": f"{batch}-{i}", TIMER_DELIVER_MS: str(NOW + 3_600_000 + i)})
                 for i in range(1_000)]
        store.put(route_all(store, items, NOW, None))
    store.wait_flushed(store.commit_log.end_offset).result(5)  # type: ignore[union-attr]
    index.checkpoint()  # 65,536 buffered: a run
    assert index.pending == 100_000
    store.close()
    reopened = _store(tmp_path)
    try:
        again = TimerIndex(reopened)
        assert again.pending == 100_000 and again.reads < 65_536
        assert again.next_due() == NOW + 3_600_000
    finally:
        reopened.close()


def test_merging_runs_drops_released_timers_and_keeps_the_rest(tmp_path: Path) -> None:
    clock = FakeClock(NOW / 1000)
    store = _store(tmp_path, clock)
    try:
        index = TimerIndex(store, run_entries=2, run_age=3600, fan_in=3)
        service = ReleaseService(store, index, _durable, clock=clock)
        for i in range(6):  # two timers a run; the third run merges all three
            if i == 4:
                asyncio.run(service.release([(NOW + 600, 0)]))  # m0: the second of its run, not its head
            _send(store, f"m{i}", NOW + 100 * (6 - i))  # m5 is due first
            store.wait_flushed(store.commit_log.end_offset).result(5)  # type: ignore[union-attr]
            index.checkpoint()
        runs = sorted(p for p in (tmp_path / "timers").iterdir() if p.name.startswith("run-"))
        assert len(runs) == 1 and runs[0].stat().st_size == 5 * 16  # six timers, one released
        assert index.due(NOW + 1_000, 10) == [(NOW + 100, 5), (NOW + 200, 4), (NOW + 300, 3), (NOW + 400, 2), (NOW + 500, 1)]
    finally:
        store.close()


def test_a_timer_released_from_the_buffer_stays_released_after_a_start_from_the_recorded_state(tmp_path: Path) -> None:
    store = _store(tmp_path, FakeClock(NOW / 1000))
    index = TimerIndex(store, **SMALL_RUNS)
    asyncio.run(ReleaseService(store, index, _durable, clock=lambda: NOW / 1000 + 1).release(_due_now(store, index, "m0")))
    _send(store, "m1", NOW + 2)
    store.wait_flushed(store.commit_log.end_offset).result(5)  # type: ignore[union-attr]
    index.checkpoint()  # m1 still buffered; the state records m0's release, the marker is behind markers_upto
    store.close()
    reopened = _store(tmp_path)
    try:
        assert TimerIndex(reopened, **SMALL_RUNS).due(NOW + 10_000, 10) == [(NOW + 2, 1)]
    finally:
        reopened.close()


def _due_now(store: MessageStore, index: TimerIndex, key: str) -> list[tuple[int, int]]:
    _send(store, key, NOW + 1)
    return index.due(NOW + 1, 10)


def test_compaction_merges_runs_of_similar_size_only_and_drops_released_entries(tmp_path: Path) -> None:
    clock = FakeClock(NOW / 1000)
    store = _store(tmp_path, clock)

    def checkpoint() -> set[str]:
        store.wait_flushed(store.commit_log.end_offset).result(5)  # type: ignore[union-attr]
        index.checkpoint()
        return {p.name for p in (tmp_path / "timers").iterdir() if p.name.startswith("run-")}

    try:
        index = TimerIndex(store, run_entries=2, run_age=3600, fan_in=2)  # tier 0: under 4 timers, tier 1: 4 to 7
        service = ReleaseService(store, index, _durable, clock=clock)
        for i in range(4):
            _send(store, f"big{i}", NOW + 1_000 + i)  # offsets 0-3
        [big] = checkpoint()
        _send(store, "s4", NOW + 100)
        _send(store, "s5", NOW + 200)
        assert len(checkpoint()) == 2  # 4 and 2: different tiers, not merged
        asyncio.run(service.release([(NOW + 200, 5)]))  # not its run's head: left out by the merge
        _send(store, "s6", NOW + 50)
        _send(store, "s7", NOW + 300)
        runs = checkpoint()  # two runs of 2 in tier 0: merged; the run of 4 is left as it is
        assert big in runs and len(runs) == 2
        [merged] = runs - {big}
        assert (tmp_path / "timers" / merged).stat().st_size == 3 * 16
        assert index.pending == 7
        assert index.due(NOW + 2_000, 10) == [(NOW + 50, 6), (NOW + 100, 4), (NOW + 300, 7)] + [(NOW + 1_000 + i, i) for i in range(4)]
    finally:
        store.close()
