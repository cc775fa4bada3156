"""A follower fetches again while its last fsync runs, and tells the leader of each fsync by a fetch or an ack.

The follower's store is a fake whose fsyncs complete only when the test says so;
the leader is a fake replication endpoint that answers the log it is given and
holds a fetch from its log end until the test releases it (as a leader waits for
new writes).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from halfmq.broker.api.routes.cluster import LOG_END_HEADER
from halfmq.broker.cluster.follower import HISTORY_HEADER, SEGMENT_HEADER, TERM_HEADER, Follower
from halfmq.broker.cluster.peers import PeerClient, PeerRequest, PeerResponse
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

    def complete(self, offset: int) -> None:
        self.flushed_offset = offset
        for end, done in self.fsyncs:
            if end <= offset and not done.done():
                done.set_result(offset)


class Leader:
    """A leader's replication endpoints over ``log``; a fetch from its end waits until ``write`` adds bytes.

    The fetches numbered in ``held`` (1 is the first) are answered only once ``release`` is set: a slow answer.
    """

    def __init__(self, log: bytes, held: frozenset[int] = frozenset()) -> None:
        self.log = log
        self.fetches: list[dict[str, Any]] = []
        self.acks: list[dict[str, Any]] = []
        self.written = asyncio.Event()
        self.held = held
        self.release = asyncio.Event()

    def write(self, data: bytes) -> None:
        self.log += data
        self.written.set()

    async def handle(self, request: PeerRequest) -> PeerResponse:
        headers = {TERM_HEADER: str(TERM)}
        if request.url.path == "/v1/replication/term-end":
            return PeerResponse.of(200, json={"end_offset": 0}, headers=headers)
        if request.url.path == "/v1/replication/ack":
            self.acks.append(json.loads(request.content))
            return PeerResponse.of(200, json={"counted": True, "durable_offset": self.acks[-1]["durable_offset"], "high_watermark": 0},
                                  headers=headers)
        if request.url.path != "/v1/replication/fetch":
            return PeerResponse.of(404)
        body = json.loads(request.content)
        self.fetches.append(body)
        if len(self.fetches) in self.held:
            await self.release.wait()
        if body["from_offset"] >= len(self.log):
            self.written.clear()
            await self.written.wait()
        data = self.log[body["from_offset"]:body["from_offset"] + 100]  # at most 100 bytes an answer
        return PeerResponse.of(200, content=data, headers={**headers, LOG_END_HEADER: str(len(self.log)),
                                                          SEGMENT_HEADER: str(SEGMENT), HISTORY_HEADER: json.dumps([[TERM, 0]])})


@pytest.fixture
async def following(tmp_path: Path) -> AsyncIterator[Callable[[bytes], Any]]:
    tasks: list[asyncio.Task[None]] = []
    clients: list[PeerClient] = []

    def start(log: bytes, held: frozenset[int] = frozenset()) -> tuple[SlowDisk, Leader, Follower]:
        disk, leader = SlowDisk(), Leader(log, held)
        http = fake_peers(leader.handle, LEADER)
        clients.append(http)
        follower = Follower("n2", lambda: disk, TermHistory(tmp_path / "h.json"), http, lambda: TERM, 10.0)  # type: ignore[arg-type, return-value]
        tasks.append(asyncio.get_running_loop().create_task(follower.follow(LEADER, TERM)))
        return disk, leader, follower

    yield start
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    for http in clients:
        await http.aclose()


async def test_a_follower_fetches_the_next_bytes_while_its_previous_fsync_runs_and_acks_it_without_waiting_for_new_writes(
        following: Callable[[bytes], tuple[SlowDisk, Leader, Follower]]) -> None:
    disk, leader, follower = following(b"x" * 100)
    await until(lambda: len(leader.fetches) == 2)
    assert leader.fetches[1]["from_offset"] == 100 and leader.fetches[1]["durable_offset"] == 0
    assert [end for end, done in disk.fsyncs if not done.done()] == [100]  # the second fetch left during the fsync
    assert follower.history.entries == [(TERM, 0)]  # the term is taken with the bytes
    disk.complete(100)
    await until(lambda: bool(leader.acks))
    assert leader.acks == [{"node_id": "n2", "term": TERM, "durable_offset": 100}]
    assert len(leader.fetches) == 2  # no new write came: the ack told the leader, the fetch still waits


async def test_a_follower_behind_the_leader_tells_its_fsync_by_the_next_fetch_and_sends_no_ack(
        following: Callable[..., tuple[SlowDisk, Leader, Follower]]) -> None:
    disk, leader, _ = following(b"x" * 200, held=frozenset({2}))
    await until(lambda: len(leader.fetches) == 2)  # from 100, behind the leader's end (200): its answer is slow
    disk.complete(100)
    await run_ready()
    assert leader.acks == []  # the fetch in flight comes back with bytes, and the next one carries it
    leader.release.set()
    await until(lambda: len(leader.fetches) == 3)  # from 200, the leader's end: it waits there
    assert [f["durable_offset"] for f in leader.fetches] == [0, 0, 100]
    assert leader.acks == []
    disk.complete(200)
    await until(lambda: bool(leader.acks))
    assert leader.acks == [{"node_id": "n2", "term": TERM, "durable_offset": 200}]
