"""Recalling a timed message: a release marker with no message, so the index drops it on every node and every start."""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path

import pytest

from halfmq.broker.store.message_store import MessageStore, PutItem, StoreConfig
from halfmq.broker.store.topics import TIMER_QUEUE, TIMER_TOPIC
from halfmq.broker.timers.recall import RecallHandle, Recalls, Verdict, handle_of, verdict
from halfmq.broker.timers.release_service import ReleaseService
from halfmq.broker.timers.routing import TIMER_DELIVER_MS, route_all
from halfmq.broker.timers.timer_index import TimerIndex
from halfmq.errors import InvalidRecallHandle, RecallTooLate

from ..half_messages.fakes import FakeClock

NOW = 1_800_000_000_000
SMALL_RUNS = {"run_entries": 2, "run_age": 3600.0, "fan_in": 8}


async def _durable(offset: int) -> None:
    return None


def _store(path: Path, clock: FakeClock) -> MessageStore:
    store = MessageStore(StoreConfig(data_dir=path, checkpoint_interval=60), clock=clock)
    store.create_topic("ORDERS", 2)
    store.create_topic("OTHER", 1)
    return store


def _send(store: MessageStore, key: str, due_ms: int, topic: str = "ORDERS") -> str:
    """A timed message as the send path writes it: its recall handle, as the send answers it."""
    item = PutItem(topic, 0, key.encode(), {"UNIQ_KEY": key, TIMER_DELIVER_MS: str(due_ms)})
    [result], _ = store.put(route_all(store, [item], NOW, None))
    handle = handle_of(result.topic, result.queue_id, result.queue_offset, result.commit_log_offset, result.properties)
    assert handle is not None
    return handle


def _visible(store: MessageStore, topic: str = "ORDERS") -> list[str]:
    return [m.properties["UNIQ_KEY"] for q in range(2) for m in store.reads.read_queue(topic, q, 0, 1000)]


def _release_everything(store: MessageStore, index: TimerIndex, clock: FakeClock) -> None:
    service = ReleaseService(store, index, _durable, clock=clock)
    while due := index.due(int(clock() * 1000), 100):
        asyncio.run(service.release(due))


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(NOW / 1000)


def test_a_recall_is_decided_by_the_due_time_and_whether_the_timer_is_still_pending() -> None:
    assert verdict(NOW + 1, NOW, pending=True) is Verdict.RECALL
    assert verdict(NOW + 1, NOW, pending=False) is Verdict.ALREADY_RECALLED
    assert verdict(NOW, NOW, pending=True) is Verdict.TOO_LATE  # due this millisecond: the release service may be writing it
    assert verdict(NOW - 1, NOW, pending=False) is Verdict.TOO_LATE


def test_a_recalled_message_is_never_released_and_its_neighbour_is(tmp_path: Path, clock: FakeClock) -> None:
    store = _store(tmp_path, clock)
    try:
        index = TimerIndex(store)
        recalled = _send(store, "recalled", NOW + 60_000)
        _send(store, "kept", NOW + 60_000)
        outcome = Recalls(store, index, lambda: int(clock() * 1000)).recall("ORDERS", recalled)
        assert (outcome.msg_id, outcome.topic, outcome.deliver_at_ms, outcome.duplicate) == ("recalled", "ORDERS", NOW + 60_000, False)
        assert outcome.end == store.commit_log.end_offset
        assert index.pending == 1
        clock.advance(120)
        _release_everything(store, index, clock)
        assert _visible(store) == ["kept"]
    finally:
        store.close()


def test_a_recall_survives_a_restart_and_reaches_a_follower(tmp_path: Path, clock: FakeClock) -> None:
    """The recall is a record in the log: a start without timers/state.json and a follower's replay both drop the timer."""
    leader = _store(tmp_path / "leader", clock)
    follower = _store(tmp_path / "follower", clock)
    try:
        index = TimerIndex(leader)
        following = TimerIndex(follower)
        handle = _send(leader, "recalled", NOW + 60_000)
        _send(leader, "kept", NOW + 60_000)
        Recalls(leader, index, lambda: int(clock() * 1000)).recall("ORDERS", handle)
        follower.append_replicated(leader.commit_log.read(0, leader.commit_log.end_offset), 0)
        assert following.due(NOW + 60_000, 10) == [(NOW + 60_000, 1)]
        leader.close()
        reopened = _store(tmp_path / "leader", clock)
        try:
            rebuilt = TimerIndex(reopened)
            assert rebuilt.due(NOW + 60_000, 10) == [(NOW + 60_000, 1)]
            clock.advance(120)
            _release_everything(reopened, rebuilt, clock)
            assert _visible(reopened) == ["kept"]
        finally:
            reopened.close()
    finally:
        leader.close()
        follower.close()


def test_a_timer_held_in_a_run_on_disk_is_found_and_recalled(tmp_path: Path, clock: FakeClock) -> None:
    store = _store(tmp_path, clock)
    try:
        index = TimerIndex(store, **SMALL_RUNS)  # type: ignore[arg-type]
        handles = [_send(store, f"m{i}", NOW + 10_000 + i) for i in range(5)]
        store.wait_flushed(store.commit_log.end_offset).result(5)  # type: ignore[union-attr]
        index.checkpoint()  # the buffer becomes a run
        assert index.holds(NOW + 10_003, 3) and not index.holds(NOW + 10_004, 3)
        recalls = Recalls(store, index, lambda: int(clock() * 1000))
        recalls.recall("ORDERS", handles[3])
        assert not index.holds(NOW + 10_003, 3)
        assert [offset for _, offset in index.due(NOW + 20_000, 10)] == [0, 1, 2, 4]
    finally:
        store.close()


def test_a_second_recall_answers_duplicate_and_writes_nothing(tmp_path: Path, clock: FakeClock) -> None:
    store = _store(tmp_path, clock)
    try:
        recalls = Recalls(store, TimerIndex(store), lambda: int(clock() * 1000))
        handle = _send(store, "twice", NOW + 60_000)
        recalls.recall("ORDERS", handle)
        end = store.commit_log.end_offset
        again = recalls.recall("ORDERS", handle)
        assert again.duplicate and again.end == end == store.commit_log.end_offset
    finally:
        store.close()


def test_a_recall_once_due_is_too_late_even_before_the_release_and_writes_nothing(tmp_path: Path, clock: FakeClock) -> None:
    store = _store(tmp_path, clock)
    try:
        index = TimerIndex(store)
        recalls = Recalls(store, index, lambda: int(clock() * 1000))
        handle = _send(store, "late", NOW + 1_000)
        clock.advance(1)
        end = store.commit_log.end_offset
        with pytest.raises(RecallTooLate):
            recalls.recall("ORDERS", handle)
        assert store.commit_log.end_offset == end and index.pending == 1
        _release_everything(store, index, clock)
        with pytest.raises(RecallTooLate):
            recalls.recall("ORDERS", handle)
        assert _visible(store) == ["late"]
    finally:
        store.close()


def _edited(handle: str, **changes: object) -> str:
    parsed = RecallHandle.decode(handle)
    fields = {"topic": parsed.topic, "timer_offset": parsed.timer_offset, "commit_log_offset": parsed.commit_log_offset,
              "msg_id": parsed.msg_id, **changes}
    return RecallHandle(**fields).encode()  # type: ignore[arg-type]


def test_a_handle_the_log_does_not_back_is_refused_and_changes_nothing(tmp_path: Path, clock: FakeClock) -> None:
    store = _store(tmp_path, clock)
    try:
        index = TimerIndex(store)
        recalls = Recalls(store, index, lambda: int(clock() * 1000))
        handle = _send(store, "real", NOW + 60_000)
        _send(store, "other", NOW + 60_000, topic="OTHER")
        end = store.commit_log.end_offset
        forged = [
            "not-a-handle", "", base64.urlsafe_b64encode(b"r1\x1fORDERS\x1fx\x1f0\x1fa").decode(),
            _edited(handle, msg_id="someone-else"),  # the record carries another id
            _edited(handle, timer_offset=1),  # another topic's timer
            _edited(handle, timer_offset=7),  # past the timer queue's end
            _edited(handle, commit_log_offset=3),  # not where the timer sits
            _edited(handle, timer_offset=-1),
        ]
        for text in forged:
            with pytest.raises(InvalidRecallHandle):
                recalls.recall("ORDERS", text)
        with pytest.raises(InvalidRecallHandle):
            recalls.recall("OTHER", handle)  # a real handle, asked of another topic
        assert store.commit_log.end_offset == end and index.pending == 2
        assert store.reads.queue_range(TIMER_TOPIC, TIMER_QUEUE) == (0, 2)
    finally:
        store.close()
