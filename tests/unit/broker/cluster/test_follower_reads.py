"""A follower's readers see what its leader acknowledged and it has on disk, no further: the bound moves with each run.

Two real stores: the leader's, whose log a fake replication stream pushes with a high watermark
the test sets, and the follower's, opened as a set's node opens it (nothing visible until told).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from halfmq.broker.cluster.follower import TERM_HEADER, Follower
from halfmq.broker.cluster.high_watermark import HighWatermark
from halfmq.broker.cluster.peers import PeerRequest, PeerResponse
from halfmq.broker.cluster.replica_tracker import ReplicaTracker
from halfmq.broker.cluster.stream_frames import RUN, run_frame
from halfmq.broker.cluster.term_history import TermHistory
from halfmq.broker.store.message_store import MessageStore, StoreConfig
from halfmq.broker.store.store_types import PutItem
from tests.support.fake_peers import fake_peers
from tests.support.loop_steps import until

TERM = 3
LEADER = "http://leader.test"


class Leader:
    """The leader's log on a replication stream; its high watermark is what the test says (``mark``).

    A run is pushed when there are bytes the follower has not been sent or a mark it has not heard, as a leader's stream does.
    """

    def __init__(self, store: MessageStore) -> None:
        self.store = store
        self._mark = 0
        self._moved = asyncio.Event()
        self._sent = self._told = 0

    @property
    def mark(self) -> int:
        return self._mark

    @mark.setter
    def mark(self, offset: int) -> None:
        self._mark = offset
        self._moved.set()

    async def handle(self, request: PeerRequest) -> PeerResponse:
        assert request.url.path == "/v1/replication/term-end"
        return PeerResponse.of(200, json={"end_offset": self.store.commit_log.end_offset}, headers={TERM_HEADER: str(TERM)})

    async def stream(self, url: str, first: bytes, max_message_bytes: int = 0) -> Leader:
        self._sent = self._told = 0
        hello = json.loads(first)
        self._sent = hello["from_offset"]
        return self

    async def send(self, data: bytes) -> None:  # the follower's acks
        pass

    async def receive(self) -> bytes:
        start, end = self._sent, self.store.commit_log.end_offset
        while start >= end and self.mark <= self._told:  # caught up, and nothing new to tell
            self._moved.clear()
            await self._moved.wait()
        data = self.store.commit_log.read(start, end - start) if end > start else b""
        self._sent, self._told = end, self.mark
        return run_frame(RUN, TERM, start, end, self.mark, 0, self.store.config.segment_bytes, data, history=[(TERM, 0)])

    async def aclose(self) -> None:
        pass


def _store(path: Path) -> MessageStore:
    store = MessageStore(StoreConfig(path))
    store.visible.limit(0)  # as BrokerRuntime.open leaves a set's node: nothing shown until it leads or hears its leader's mark
    return store


@pytest.fixture
async def pair(tmp_path: Path) -> AsyncIterator[tuple[Leader, MessageStore, Callable[[], None]]]:
    leader_store, store = MessageStore(StoreConfig(tmp_path / "leader")), _store(tmp_path / "follower")
    leader_store.create_topic("T", 1)
    leader = Leader(leader_store)
    http = fake_peers(leader.handle, LEADER)
    http.stream = leader.stream  # type: ignore[method-assign, assignment]
    follower = Follower("n2", lambda: store, TermHistory(tmp_path / "history.json"), http, lambda: TERM, 10.0)
    task: asyncio.Task[None] | None = None

    def start() -> None:
        nonlocal task
        task = asyncio.get_running_loop().create_task(follower.follow(LEADER, TERM))

    yield leader, store, start
    if task is not None:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    await http.aclose()
    store.close()
    leader_store.close()


def _bodies(store: MessageStore) -> list[bytes]:
    return [m.body for m in store.visible.read_queue("T", 0, 0, 10)]


async def test_a_follower_shows_messages_up_to_its_leaders_high_watermark_and_no_further(pair) -> None:
    leader, store, start = pair
    ends = [leader.store.put([PutItem("T", 0, body)])[1] for body in (b"a", b"b", b"c")]
    leader.mark = ends[1]  # "c" is on the leader, not acknowledged yet
    start()
    await until(lambda: store.commit_log.end_offset == ends[2])  # pushed and appended; its fsync runs
    await asyncio.wait_for(asyncio.wrap_future(store.wait_flushed(ends[2])), 10)  # a hang guard, not a measurement
    await until(lambda: store.acknowledged_end == ends[2] and store.visible.bound == ends[1])
    assert _bodies(store) == [b"a", b"b"]
    assert store.visible.queue_range("T", 0) == (0, 2)
    leader.mark = ends[2]
    await until(lambda: store.visible.bound == ends[2])
    assert _bodies(store) == [b"a", b"b", b"c"]


async def test_a_follower_shows_nothing_past_its_own_disk_even_when_the_leaders_mark_is_further(pair) -> None:
    leader, store, _ = pair
    ends = [leader.store.put([PutItem("T", 0, body)])[1] for body in (b"a", b"b")]
    leader.mark = ends[1]
    store.append_replicated(leader.store.commit_log.read(0, ends[0]), 0)  # only "a" is here
    async with fake_peers(leader.handle, LEADER) as http:
        follower = Follower("n2", lambda: store, TermHistory(Path(store.config.data_dir) / "h.json"), http, lambda: TERM, 10.0)
        follower.leader_high_watermark = ends[1]
        await asyncio.wrap_future(store.wait_flushed(ends[0]))
        follower._show_acknowledged(store)
    assert store.visible.bound == ends[0] and _bodies(store) == [b"a"]


async def test_a_node_that_stopped_leading_leaves_the_bound_of_its_next_store_to_its_follower(tmp_path: Path) -> None:
    led, following = _store(tmp_path / "led"), _store(tmp_path / "following")
    current = led
    tracker = ReplicaTracker("n1", 1, lag_time=2.0)
    watermark = HighWatermark(tracker, lambda: current)
    try:
        tracker.reset(frozenset({"n1"}))
        watermark.lead(led)
        following.create_topic("T", 1)
        end = following.put([PutItem("T", 0, b"not acknowledged by the leader this node follows")])[1]
        await asyncio.wrap_future(following.wait_flushed(end))
        current = following  # a role change: the runtime reopened
        watermark.advance()
        assert following.visible.bound == 0 and _bodies(following) == []
    finally:
        led.close()
        following.close()
