"""What a leader pushes on a follower's stream, and how it counts its acks (cluster/replication_stream.py), under a
fake clock: the times are the test's numbers, nothing sleeps. The node is a fake over a byte log; the tracker and the
term history are the real ones (what a report counts is theirs)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from halfmq import wire
from halfmq.broker.cluster.replica_tracker import ReplicaTracker
from halfmq.broker.cluster.replication_stream import Diverged, StreamDecision, push
from halfmq.broker.cluster.stream_frames import KEEPALIVE_SECONDS, RUN, SILENT_SECONDS, WATERMARK_SECONDS, BadFrame, Run, ack_frame, read_run
from halfmq.broker.cluster.term_history import TermHistory
from halfmq.errors import BehindLogStart, NotLeader

SEGMENT = 1 << 20
BOUND = 1000  # the node's in-flight bound (bytes pushed past the follower's durable end)


class ByteLog:
    """What the decision reads of a commit log: its end, its segment size, a run of it (at most ``most`` bytes)."""

    def __init__(self) -> None:
        self.data = b""
        self.segment_bytes = SEGMENT

    @property
    def end_offset(self) -> int:
        return len(self.data)

    def read_groups(self, start: int, end: int, most: int) -> bytes:  # (its bytes are no records: any cut is a group's end)
        return self.data[start:min(end, start + most)]


class Node:
    """A leading node of term 4 whose history began term 4 at 0."""

    def __init__(self, tmp_path: Path) -> None:
        self.writable, self.term = True, 4
        self.history = TermHistory(tmp_path / "term-history.json")
        self.history.begin(4, 0)
        self.tracker = ReplicaTracker("n1", 3, lag_time=2.0)
        self.tracker.reset(frozenset({"n1", "n2", "n3"}))
        self.store = SimpleNamespace(commit_log=ByteLog(), log_start=SimpleNamespace(offset=0))
        self.settings = SimpleNamespace(replication_in_flight_bytes=BOUND)
        self.appended = asyncio.Event()

    def write(self, data: bytes) -> None:
        self.store.commit_log.data += data

    def not_leader(self) -> NotLeader:
        return NotLeader("a newer term leads", leader_url=None)

    def picture_for(self, follower: str) -> str | None:
        return json.dumps({"leader": "n1"}) if follower == "n2" else None


@pytest.fixture
def node(tmp_path: Path) -> Node:
    return Node(tmp_path)


def _hello(**fields: object) -> wire.FetchRequest:
    return wire.FetchRequest(**{"node_id": "n2", "term": 4, "from_offset": 0, **fields})  # type: ignore[arg-type]


def _stream(node: Node, now: float = 0.0, **fields: object) -> StreamDecision:
    return StreamDecision(node, _hello(**fields), now)  # type: ignore[arg-type]


def _run(stream: StreamDecision, now: float) -> Run:
    frame = stream.next_frame(now)
    assert frame is not None
    return read_run(frame)


def test_a_run_carries_the_new_bytes_the_term_segment_size_log_end_watermark_picture_and_the_history_once(node: Node) -> None:
    node.write(b"a" * 100)
    stream = _stream(node)
    first = _run(stream, 0.0)
    assert (first.kind, first.term, first.from_offset, first.log_end, first.segment_bytes) == (RUN, 4, 0, 100, SEGMENT)
    assert first.data == b"a" * 100 and first.history == [(4, 0)] and json.loads(first.picture or "")["leader"] == "n1"
    assert stream.next_frame(0.0) is None  # nothing new
    node.write(b"b" * 10)
    later = _run(stream, 0.0)
    assert (later.from_offset, later.data, later.history) == (100, b"b" * 10, None)  # the history went once


def test_a_follower_holding_the_leaders_history_is_not_sent_it_and_one_holding_an_older_one_is(node: Node) -> None:
    node.write(b"a")
    assert _run(_stream(node, history_term=4), 0.0).history is None
    assert _run(_stream(node, history_term=3), 0.0).history == [(4, 0)]


def test_a_stream_from_past_the_log_end_is_a_divergence_and_one_of_a_higher_term_or_to_a_non_leader_is_refused(node: Node) -> None:
    with pytest.raises(Diverged):
        _stream(node, from_offset=10)
    with pytest.raises(NotLeader):
        _stream(node, term=5)
    stream = _stream(node)
    node.writable = False  # its fence passed, or a newer term leads: the stream ends at the next frame
    with pytest.raises(NotLeader):
        stream.next_frame(0.0)


def test_the_opening_counts_as_a_fetch_from_the_appended_end_voting_with_the_durable_one(node: Node) -> None:
    node.write(b"a" * 100)
    _stream(node, from_offset=100, durable_offset=10)
    assert (node.tracker.progress["n2"].fetched, node.tracker.progress["n2"].durable) == (100, 10)


def test_a_stream_of_an_earlier_term_is_served_but_neither_it_nor_its_acks_count(node: Node) -> None:
    node.write(b"a" * 100)
    stream = _stream(node, term=3)  # n2 has not cut its log against term 4: no vote
    assert _run(stream, 0.0).data == b"a" * 100
    stream.heard(100, 100, 0.1)
    assert node.tracker.progress["n2"].durable == 0
    _stream(node, term=4, from_offset=100)
    assert node.tracker.progress["n2"].durable == 100


def test_an_ack_counts_upwards_and_one_past_what_was_pushed_or_below_the_last_ends_the_stream(node: Node) -> None:
    node.write(b"a" * 100)
    stream = _stream(node)
    _run(stream, 0.0)
    stream.heard(40, 100, 0.1)
    assert (node.tracker.progress["n2"].durable, node.tracker.progress["n2"].fetched) == (40, 100)
    stream.heard(100, 100, 0.2)
    assert node.tracker.progress["n2"].durable == 100
    with pytest.raises(BadFrame):
        stream.heard(20, 100, 0.3)  # late, below the last one
    with pytest.raises(BadFrame):
        _stream(node).heard(0, 150, 0.0)  # past what was pushed (and past the leader's log): not a copy of it
    assert node.tracker.progress["n2"].durable == 100


def test_no_more_than_the_in_flight_bound_is_pushed_past_the_durable_end_until_an_ack_and_the_ack_wakes_the_loop(node: Node) -> None:
    stream = _stream(node)
    for _ in range(2):
        node.write(b"x" * 600)
        assert _run(stream, 0.0).data == b"x" * 600
    node.write(b"y" * 600)  # 1,200 bytes in flight past the durable end 0: past the bound of 1,000
    assert stream.next_frame(0.0) is None and stream.blocked
    node.appended.clear()
    stream.heard(600, 1200, 0.1)  # 600 in flight now
    assert node.appended.is_set() and not stream.blocked
    assert _run(stream, 0.1).data == b"y" * 600


def test_a_follower_silent_for_a_second_is_pushed_no_bytes_until_it_speaks_only_keep_alives(node: Node) -> None:
    stream = _stream(node)
    node.write(b"a" * 10)
    late = SILENT_SECONDS + 0.01
    frame = stream.next_frame(late)  # bytes wait; the keep-alive is due (nothing sent since 0)
    assert frame is not None and read_run(frame).data == b"" and stream.blocked
    assert stream.next_frame(late) is None
    stream.heard(0, 0, late + 0.1)
    assert _run(stream, late + 0.1).data == b"a" * 10


def test_a_moved_high_watermark_alone_is_told_at_once_then_no_sooner_than_its_interval(node: Node) -> None:
    stream = _stream(node, high_watermark=0)
    assert stream.next_frame(0.0) is None
    node.tracker.high_watermark = 50
    told = _run(stream, 0.001)
    assert (told.data, told.high_watermark) == (b"", 50)
    node.tracker.high_watermark = 60
    assert stream.next_frame(0.002) is None  # too soon after the last
    assert stream.wait_seconds(0.002) == pytest.approx(WATERMARK_SECONDS - 0.001)
    assert _run(stream, 0.001 + WATERMARK_SECONDS).high_watermark == 60


def test_an_idle_stream_gets_an_empty_run_each_keep_alive_interval(node: Node) -> None:
    stream = _stream(node, high_watermark=0)  # (a follower that said no mark is told the leader's at once)
    assert stream.next_frame(KEEPALIVE_SECONDS - 0.01) is None
    assert stream.wait_seconds(KEEPALIVE_SECONDS - 0.1) == pytest.approx(0.1)
    idle = _run(stream, KEEPALIVE_SECONDS)
    assert (idle.kind, idle.data, idle.from_offset) == (RUN, b"", 0)
    assert stream.next_frame(KEEPALIVE_SECONDS + 0.01) is None


def test_a_follower_below_the_log_start_is_behind_and_one_at_it_is_served_from_there(node: Node) -> None:
    node.write(b"a" * 100)
    node.store.log_start.offset = 40
    with pytest.raises(BehindLogStart) as behind:
        _stream(node).next_frame(0.0)
    assert behind.value.extra["log_start"] == 40
    at_start = _run(_stream(node, from_offset=40), 0.0)
    assert (at_start.from_offset, at_start.log_start, at_start.data) == (40, 40, b"a" * 60)


async def test_the_loop_pushes_each_append_and_ends_with_what_ended_the_acks(node: Node) -> None:
    clock = SimpleNamespace(now=0.0)
    stream = _stream(node)
    acks: asyncio.Queue[bytes | None] = asyncio.Queue()
    sent: list[Run] = []
    pushed = asyncio.Event()

    async def send(frame: bytes) -> None:
        sent.append(read_run(frame))
        pushed.set()

    loop = asyncio.get_running_loop().create_task(push(stream, acks.get, send, lambda: clock.now))
    node.write(b"a" * 10)
    node.appended.set()
    await asyncio.wait_for(pushed.wait(), 5)
    assert [run.data for run in sent] == [b"a" * 10]
    acks.put_nowait(ack_frame(10, 10))
    acks.put_nowait(ack_frame(5, 10))  # below the last: the stream ends
    with pytest.raises(BadFrame):
        await asyncio.wait_for(loop, 5)
    assert node.tracker.progress["n2"].durable == 10
