"""The leader's side of one follower's replication stream (decision 054): what to push next, and the loop that pushes it.

``StreamDecision`` is pure but for the node it reads: given the time (the caller's clock, a fake one in the tests) it
says which frame goes next, or none yet, and takes the follower's acks. ``push`` is the thin loop around it: it wakes
on every append (the node's ``appended`` event), an ack or the next deadline. The front (api/routes/cluster.py) only
adapts the WebSocket: it accepts or refuses, and hands frames in and out as bytes.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from halfmq import wire
from halfmq.errors import BehindLogStart, NotLeader

from .stream_frames import BEHIND, KEEPALIVE_SECONDS, RUN, RUN_MAX_BYTES, SILENT_SECONDS, WATERMARK_SECONDS, BadFrame, read_ack, run_frame

if TYPE_CHECKING:
    from .node import ClusterNode


class Diverged(NotLeader):
    code = "REPLICA_DIVERGED"
    status = 409
    title = "The follower's log is longer than the leader's: it must cut its tail first"


def check_leader(node: ClusterNode, term: int | None = None) -> None:
    """NotLeader unless this node leads, in a term no lower than ``term`` (the follower's)."""
    if not node.writable or (term is not None and term > node.term):
        raise node.not_leader()


def this_leadership(node: ClusterNode, term: int) -> bool:
    """A follower's report counts only if it follows this leadership's terms: else its log was not cut against it."""
    return term >= node.history.last_term


class StreamDecision:
    """One follower's stream on the leader: what was pushed, what the follower said it holds, when it was last heard."""

    def __init__(self, node: ClusterNode, hello: wire.FetchRequest, now: float) -> None:
        """The follower's first message taken: NotLeader for a higher term or a node not leading, Diverged past the
        log's end; else its position is counted as a report (when it follows this leadership's terms)."""
        check_leader(node, hello.term)
        end = node.store.commit_log.end_offset
        if hello.from_offset > end:
            raise Diverged(f"follower {hello.node_id} asks from {hello.from_offset}, the log ends at {end}")
        self.node = node
        self.hello = hello
        self.counts = this_leadership(node, hello.term)
        self.sent = hello.from_offset
        self.durable = hello.from_offset if hello.durable_offset is None else min(hello.durable_offset, hello.from_offset)
        self.history_term = hello.history_term
        self.watermark = -1 if hello.high_watermark is None else hello.high_watermark
        self.blocked = False  # the in-flight bound or the follower's silence holds the next run back: an ack wakes it
        self.heard_at = now  # the follower's last message
        self.sent_at = now  # the last frame pushed
        self.watermark_told_at = float("-inf")  # when a run without bytes last told a moved high watermark
        if self.counts:
            node.tracker.report(hello.node_id, self.durable, end, fetched=hello.from_offset)

    def heard(self, durable: int, appended: int, now: float) -> None:
        """An ack: counted as a fetch from ``appended`` with ``durable`` on disk was (``ReplicaTracker.report``).
        BadFrame (the stream ends) past what was pushed or below the last ack."""
        node = self.node
        if appended > self.sent or durable < self.durable:
            raise BadFrame(f"an ack of {durable}/{appended}: past what was pushed ({self.sent}) or below the last ({self.durable})")
        self.durable = durable
        self.heard_at = now
        if self.counts:
            node.tracker.report(self.hello.node_id, durable, node.store.commit_log.end_offset, fetched=appended)
        if self.blocked:
            self.blocked = False
            node.appended.set()

    def next_frame(self, now: float) -> bytes | None:
        """The frame to push now: a run of new bytes (unless too many are in flight, or the follower has been silent for
        ``SILENT_SECONDS``: a stopped follower's socket does not fill with bytes it would take when it resumes, long
        after), else a moved high watermark at once but no sooner than ``WATERMARK_SECONDS`` after the last run without
        bytes (under load the runs carry it), else an empty run once ``KEEPALIVE_SECONDS`` passed without one (the
        leader lives: a follower that hears nothing for its read timeout reconnects); None: nothing yet.
        NotLeader once this node no longer leads; BehindLogStart past the log start."""
        node = self.node
        check_leader(node, self.hello.term)
        store = node.store
        log, log_start = store.commit_log, store.log_start.offset
        if self.sent < log_start:
            raise BehindLogStart(f"follower {self.hello.node_id} is at {self.sent}, the log starts at {log_start}", log_start=log_start)
        end = log.end_offset
        data = b""
        if end > self.sent:
            if self.sent - self.durable >= node.settings.replication_in_flight_bytes or now - self.heard_at >= SILENT_SECONDS:
                self.blocked = True
            else:
                data = log.read_groups(self.sent, end, RUN_MAX_BYTES)  # whole write groups: a follower takes no part of one
        hwm = node.tracker.high_watermark
        if not data:
            if hwm > self.watermark and now - self.watermark_told_at >= WATERMARK_SECONDS:
                self.watermark_told_at = now
            elif now - self.sent_at < KEEPALIVE_SECONDS:
                return None
        history = None
        if self.history_term != node.history.last_term:
            history, self.history_term = node.history.entries, node.history.last_term
        frame = run_frame(RUN, node.term, self.sent, end, hwm, log_start, log.segment_bytes, data, history,
                          node.picture_for(self.hello.node_id))
        self.sent += len(data)
        self.sent_at = now
        self.watermark = max(self.watermark, hwm)
        return frame

    def wait_seconds(self, now: float) -> float:
        """How long the loop may sleep when ``next_frame`` said nothing: until the keep-alive, or a moved high
        watermark's turn; an append or an ack wakes it sooner."""
        wait = KEEPALIVE_SECONDS - (now - self.sent_at)
        if self.node.tracker.high_watermark > self.watermark:
            wait = min(wait, WATERMARK_SECONDS - (now - self.watermark_told_at))
        return max(wait, 0.0)


def behind_frame(node: ClusterNode, log_start: int) -> bytes:
    """What a follower below the log start is told before its stream closes: where the log starts (catch_up.py)."""
    store = node.store
    return run_frame(BEHIND, node.term, log_start, store.commit_log.end_offset, node.tracker.high_watermark,
                     store.log_start.offset, store.commit_log.segment_bytes)


async def push(stream: StreamDecision, receive: Callable[[], Awaitable[bytes | None]], send: Callable[[bytes], Awaitable[None]],
               clock: Callable[[], float]) -> None:
    """Push what ``stream`` decides as the log grows while a task of its own takes the follower's acks (``receive``: the
    next message's bytes, None once the socket closed); ends when either side does (what ended the acks is raised)."""
    node = stream.node
    gone = False

    async def take_acks() -> None:
        nonlocal gone
        try:
            while (message := await receive()) is not None:
                stream.heard(*read_ack(message), clock())
        finally:
            gone = True
            node.appended.set()

    acks = asyncio.get_running_loop().create_task(take_acks())
    try:
        while not gone:
            now = clock()
            if (frame := stream.next_frame(now)) is not None:
                await send(frame)
                continue
            wait = stream.wait_seconds(now)
            node.appended.clear()  # (every stream checks what there is before it waits: a set meanwhile is not missed)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(wait):
                    await node.appended.wait()
        if acks.done() and (error := acks.exception()) is not None:
            raise error
    finally:
        acks.cancel()
