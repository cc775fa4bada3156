"""A follower on the replication stream appends the runs pushed to it and acks each completed fsync on the same stream.

The store is a fake whose fsyncs complete (or fail) only when the test says so; the leader is a fake stream whose runs
the test pushes, and which records the follower's first message and acks.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import errno
import json
import logging
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from halfmq.broker.cluster.catch_up import BehindLeader
from halfmq.broker.cluster.follower import STREAM_PATH, TERM_HEADER, Follower, LowerTerm, ReplicaNotStored, StreamGap
from halfmq.broker.cluster.peers import PeerClient, PeerDisconnected, PeerNotTrusted, PeerRequest, PeerResponse
from halfmq.broker.cluster.stream_frames import BEHIND, RUN, read_ack, run_frame
from halfmq.broker.cluster.term_history import TermHistory
from tests.support.fake_peers import fake_peers
from tests.support.loop_steps import run_ready, until

SEGMENT = 1 << 20
TERM = 7
LEADER = "http://leader.test"


class SlowDisk:
    """What the follower asks of its store; every fsync waits for ``complete``."""

    def __init__(self) -> None:
        self.config = SimpleNamespace(segment_bytes=SEGMENT)
        self.commit_log = SimpleNamespace(end_offset=0)
        self.flushed_offset = 0
        self.fsyncs: list[tuple[int, concurrent.futures.Future[int]]] = []
        self.visible = SimpleNamespace(advance=lambda offset: None)  # what readers see (tests/unit/broker/cluster/test_follower_reads.py)

    @property
    def acknowledged_end(self) -> int:
        return self.flushed_offset

    def append_replicated(self, data: bytes, start: int) -> int:
        self.commit_log.end_offset = start + len(data)
        return int(self.commit_log.end_offset)

    def wait_flushed(self, offset: int) -> concurrent.futures.Future[int]:
        done: concurrent.futures.Future[int] = concurrent.futures.Future()
        self.fsyncs.append((offset, done))
        return done

    def fail(self, offset: int, error: OSError) -> None:
        """The fsync of the bytes up to ``offset`` failed (EIO: they may not be on disk)."""
        for end, done in self.fsyncs:
            if end <= offset and not done.done():
                done.set_exception(error)

    def complete(self, offset: int) -> None:
        self.flushed_offset = offset
        for end, done in self.fsyncs:
            if end <= offset and not done.done():
                done.set_result(offset)


class LeaderStream:
    """The leader's end of one stream: ``push`` a run, ``first`` the follower's hello, ``acks`` what it sent after."""

    def __init__(self) -> None:
        self.frames: asyncio.Queue[bytes] = asyncio.Queue()
        self.first: dict[str, Any] | None = None
        self.acks: list[tuple[int, int]] = []
        self.closed = False

    def push(self, start: int, data: bytes, *, term: int = TERM, kind: int = RUN, high_watermark: int = 0,
             history: list[tuple[int, int]] | None = [(TERM, 0)]) -> None:  # noqa: B006 (never changed)
        self.frames.put_nowait(run_frame(kind, term, start, start + len(data), high_watermark, 0, SEGMENT, data,
                                         history=history))

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
    histories: list[TermHistory] = []

    def start() -> tuple[SlowDisk, LeaderStream, asyncio.Task[None]]:
        disk, leader = SlowDisk(), LeaderStream()
        disk.log_start = SimpleNamespace(offset=0)  # type: ignore[attr-defined]  # (retention: catch_up.LogStartFollower)
        http = fake_peers(_term_end, LEADER)
        clients.append(http)
        opened: list[str] = []

        async def stream(url: str, first: bytes, max_message_bytes: int = 0) -> LeaderStream:
            opened.append(url)
            assert url == f"{LEADER}{STREAM_PATH}"
            await leader.send(first)
            return leader

        http.stream = stream  # type: ignore[method-assign, assignment]
        histories.append(history := TermHistory(tmp_path / f"h{len(histories)}.json"))
        follower = Follower("n2", lambda: disk, history, http, lambda: TERM, 10.0)  # type: ignore[arg-type, return-value]
        task = asyncio.get_running_loop().create_task(follower.follow(LEADER, TERM))
        tasks.append(task)
        return disk, leader, task

    start.histories = histories  # type: ignore[attr-defined]  # (what each follower keeps of its leader's terms)
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
    assert [end for end, done in disk.fsyncs if not done.done()] == [100, 150]  # the second run appended while the first's fsync runs
    assert streaming.histories[0].entries == [(TERM, 0)]  # type: ignore[attr-defined]  # the term is taken with the bytes
    assert leader.acks == []  # nothing on disk yet
    disk.complete(150)
    await until(lambda: bool(leader.acks))
    assert leader.acks[-1] == (150, 150)  # no new run came: the ack told the leader


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


async def test_an_ack_claims_no_more_than_is_on_disk_and_the_appended_end_beside_it(
        streaming: Callable[[], tuple[SlowDisk, LeaderStream, asyncio.Task[None]]]) -> None:
    disk, leader, _ = streaming()
    leader.push(0, b"a" * 100)
    leader.push(100, b"b" * 100)
    await until(lambda: disk.commit_log.end_offset == 200)
    disk.complete(100)  # the first run's fsync; the second's still runs
    await until(lambda: bool(leader.acks))
    assert leader.acks[0] == (100, 200)
    disk.complete(200)
    await until(lambda: leader.acks[-1] == (200, 200))
    assert all(durable <= end for durable, end in leader.acks)


async def test_the_leaders_term_history_is_kept_from_the_run_that_carried_it_and_taken_as_the_log_reaches_its_entries(
        streaming: Callable[[], tuple[SlowDisk, LeaderStream, asyncio.Task[None]]]) -> None:
    disk, leader, _ = streaming()
    history = streaming.histories[0]  # type: ignore[attr-defined]
    leader.push(0, b"x" * 100, history=[(3, 0), (7, 150)])
    await until(lambda: disk.commit_log.end_offset == 100)
    assert history.entries == [(3, 0)]  # term 7 starts past what this log has
    leader.push(100, b"x" * 100, history=None)  # no history: unchanged
    await until(lambda: disk.commit_log.end_offset == 200)
    assert history.entries == [(3, 0), (7, 150)]


async def test_a_failed_fsync_stops_the_appends_and_is_never_acked(
        streaming: Callable[[], tuple[SlowDisk, LeaderStream, asyncio.Task[None]]]) -> None:
    disk, leader, task = streaming()
    leader.push(0, b"a" * 100)
    await until(lambda: disk.commit_log.end_offset == 100)
    disk.fail(100, OSError(errno.EIO, "fsync failed"))
    await run_ready()
    leader.push(100, b"b" * 100)
    with pytest.raises(ReplicaNotStored):
        await asyncio.wait_for(task, 5)
    assert disk.commit_log.end_offset == 100  # nothing appended past a failed fsync
    assert all(durable == 0 for durable, _ in leader.acks)  # and what it did not keep was never told as on disk


async def test_a_leader_whose_certificate_is_not_trusted_is_said_once_and_in_the_view_until_a_stream_opens(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    disk, leader = SlowDisk(), LeaderStream()
    http = fake_peers(_term_end, LEADER)

    async def stream(url: str, first: bytes, max_message_bytes: int = 0) -> LeaderStream:
        await leader.send(first)
        return leader

    http.stream = stream  # type: ignore[method-assign, assignment]
    follower = Follower("n2", lambda: disk, TermHistory(tmp_path / "h.json"), http, lambda: TERM, 10.0)  # type: ignore[arg-type, return-value]
    caplog.set_level(logging.INFO, "halfmq.broker.cluster.follower")
    for _ in range(3):  # every tick's retry meets the same certificate
        follower.stopped(PeerNotTrusted(f"cannot connect to {LEADER}: its certificate is not trusted"))
    assert follower.error == f"cannot connect to {LEADER}: its certificate is not trusted"
    assert [r.levelname for r in caplog.records] == ["ERROR"] and "does not follow" in caplog.records[0].getMessage()
    task = asyncio.get_running_loop().create_task(follower.follow(LEADER, TERM))
    try:
        await until(lambda: leader.first is not None)
        assert follower.error is None  # streaming again: the view shows no error
        assert [r.levelname for r in caplog.records] == ["ERROR", "WARNING"]  # and the log says it works again
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await http.aclose()
    follower.stopped(PeerDisconnected("the leader closed the stream"))  # any other failure: in the view, not logged here
    assert follower.error == "the leader closed the stream" and len(caplog.records) == 2
