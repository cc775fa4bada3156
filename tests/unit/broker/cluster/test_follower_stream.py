"""A follower on the replication stream appends the runs pushed to it and acks each completed fsync on the same stream.

The store is test_follower_pipelining's SlowDisk (fsyncs complete when the test says so); the leader is a fake stream
whose runs the test pushes, and which records the follower's first message and acks.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from halfmq.broker.cluster.catch_up import BehindLeader
from halfmq.broker.cluster.follower import STREAM_PATH, TERM_HEADER, Follower, LowerTerm, StreamGap
from halfmq.broker.cluster.peers import PeerClient, PeerRequest, PeerResponse
from halfmq.broker.cluster.stream_frames import BEHIND, RUN, read_ack, run_frame
from halfmq.broker.cluster.term_history import TermHistory
from tests.support.fake_peers import fake_peers
from tests.support.loop_steps import run_ready, until
from tests.unit.broker.cluster.test_follower_pipelining import SEGMENT, SlowDisk

TERM = 7
LEADER = "http://leader.test"


class LeaderStream:
    """The leader's end of one stream: ``push`` a run, ``first`` the follower's hello, ``acks`` what it sent after."""

    def __init__(self) -> None:
        self.frames: asyncio.Queue[bytes] = asyncio.Queue()
        self.first: dict[str, Any] | None = None
        self.acks: list[tuple[int, int]] = []
        self.closed = False

    def push(self, start: int, data: bytes, *, term: int = TERM, kind: int = RUN, high_watermark: int = 0) -> None:
        self.frames.put_nowait(run_frame(kind, term, start, start + len(data), high_watermark, 0, SEGMENT, data,
                                         history=[(TERM, 0)]))

    async def send(self, data: bytes) -> None:
        if self.first is None:
            self.first = json.loads(data)
        else:
            self.acks.append(read_ack(data))

    async def receive(self) -> bytes:
        return await self.frames.get()

    async def aclose(self) -> None:
        self.closed = True


async def _term_end(request: PeerRequest) -> PeerResponse:
    return PeerResponse.of(200, json={"end_offset": 0}, headers={TERM_HEADER: str(TERM)})


@pytest.fixture
async def streaming(tmp_path: Path) -> AsyncIterator[Callable[[], tuple[SlowDisk, LeaderStream, asyncio.Task[None]]]]:
    tasks: list[asyncio.Task[None]] = []
    clients: list[PeerClient] = []

    def start() -> tuple[SlowDisk, LeaderStream, asyncio.Task[None]]:
        disk, leader = SlowDisk(), LeaderStream()
        disk.log_start = SimpleNamespace(offset=0)  # type: ignore[attr-defined]  # (retention: catch_up.LogStartFollower)
        http = fake_peers(_term_end, LEADER)
        clients.append(http)
        opened: list[str] = []

        async def stream(url: str, first: bytes) -> LeaderStream:
            opened.append(url)
            assert url == f"{LEADER}{STREAM_PATH}"
            await leader.send(first)
            return leader

        http.stream = stream  # type: ignore[method-assign, assignment]
        follower = Follower("n2", lambda: disk, TermHistory(tmp_path / "h.json"), http, lambda: TERM, 10.0,  # type: ignore[arg-type, return-value]
                            stream=True)
        task = asyncio.get_running_loop().create_task(follower.follow(LEADER, TERM))
        tasks.append(task)
        return disk, leader, task

    yield start
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    for http in clients:
        await http.aclose()


async def test_a_follower_appends_pushed_runs_without_asking_and_acks_each_fsync_on_the_stream(
        streaming: Callable[[], tuple[SlowDisk, LeaderStream, asyncio.Task[None]]]) -> None:
    disk, leader, _ = streaming()
    await until(lambda: leader.first is not None)
    assert leader.first == {"node_id": "n2", "term": TERM, "from_offset": 0, "durable_offset": 0, "high_watermark": 0}
    leader.push(0, b"a" * 100)
    leader.push(100, b"b" * 50)  # two runs in flight: no round trip between them
    await until(lambda: disk.commit_log.end_offset == 150)
    assert leader.acks == []  # nothing on disk yet
    disk.complete(150)
    await until(lambda: bool(leader.acks))
    assert leader.acks[-1] == (150, 150)


async def test_a_run_that_does_not_start_where_the_log_ends_ends_the_stream(
        streaming: Callable[[], tuple[SlowDisk, LeaderStream, asyncio.Task[None]]]) -> None:
    disk, leader, task = streaming()
    leader.push(0, b"a" * 100)
    leader.push(120, b"c" * 10)  # 100..120 missing
    with pytest.raises(StreamGap):
        await asyncio.wait_for(task, 5)
    assert disk.commit_log.end_offset == 100 and leader.closed


async def test_a_run_from_a_lower_term_ends_the_stream_and_appends_nothing(
        streaming: Callable[[], tuple[SlowDisk, LeaderStream, asyncio.Task[None]]]) -> None:
    disk, leader, task = streaming()
    leader.push(0, b"a" * 100, term=TERM - 1)
    with pytest.raises(LowerTerm):
        await asyncio.wait_for(task, 5)
    assert disk.commit_log.end_offset == 0


async def test_a_behind_frame_sends_the_follower_to_the_leaders_log_start(
        streaming: Callable[[], tuple[SlowDisk, LeaderStream, asyncio.Task[None]]]) -> None:
    _, leader, task = streaming()
    leader.push(4096, b"", kind=BEHIND)
    with pytest.raises(BehindLeader) as behind:
        await asyncio.wait_for(task, 5)
    assert behind.value.log_start == 4096


async def test_the_high_watermark_a_run_carries_shows_readers_no_more_than_is_on_disk(
        streaming: Callable[[], tuple[SlowDisk, LeaderStream, asyncio.Task[None]]]) -> None:
    disk, leader, _ = streaming()
    shown: list[int] = []
    disk.visible.advance = shown.append
    leader.push(0, b"a" * 100, high_watermark=100)
    await until(lambda: disk.commit_log.end_offset == 100)
    await run_ready()
    assert max(shown) == 0  # the leader's high watermark is 100, but nothing is on disk here yet
    disk.complete(100)
    leader.push(100, b"", high_watermark=100)
    await until(lambda: max(shown) == 100)
