"""A broker set's HTTP endpoints: the cluster view and the replication calls followers make.

Thin: the node and the store decide; these only translate. Routes of the one table
(broker/api/router.py), added to it in a broker set only (``create_app``), so the
front serves them and /openapi.json documents them like every other /v1 route.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import Any

import msgspec
from pydantic import BaseModel, Field
from starlette.types import Receive, Scope, Send

from halfmq import wire
from halfmq.broker.api.body import parse_body
from halfmq.broker.api.front import ApiRequest, Reply, WebSocketEndpoint
from halfmq.broker.api.router import Route
from halfmq.broker.cluster.catch_up import LOG_START_HEADER, SNAPSHOT_ENTRIES_HEADER, SNAPSHOT_SIZE_HEADER, snapshot_part
from halfmq.broker.cluster.follower import (
    HIGH_WATERMARK_HEADER,
    HISTORY_HEADER,
    SEGMENT_HEADER,
    SET_HEADER,
    STREAM_PATH,
    TERM_HEADER,
)
from halfmq.broker.cluster.node import ClusterNode
from halfmq.broker.cluster.positions import position_of
from halfmq.broker.cluster.stream_frames import (
    BEHIND,
    KEEPALIVE_SECONDS,
    RUN,
    RUN_MAX_BYTES,
    SILENT_SECONDS,
    WATERMARK_SECONDS,
    BadFrame,
    read_ack,
    run_frame,
)
from halfmq.broker.security.policy import CLUSTER, Action
from halfmq.errors import BehindLogStart, BrokerError, InvalidRequest, NotLeader, OriginNotAllowed, StateSnapshotNotFound

log = logging.getLogger(__name__)

FETCH_MAX_BYTES = 1 << 20
FETCH_WAIT_SECONDS = 0.5
LOG_END_HEADER = "x-halfmq-log-end"
HELLO_SECONDS = 5.0  # a stream whose first message (the follower's FetchRequest) takes longer is closed


class TermEndParams(BaseModel):
    term: int
    node_id: str


class SnapshotParams(BaseModel):
    node_id: str
    offset: int = Field(0, ge=0)
    entries: int | None = Field(None, ge=0)  # the snapshot the earlier parts were of (None: the newest)


class Diverged(NotLeader):
    code = "REPLICA_DIVERGED"
    status = 409
    title = "The follower's log is longer than the leader's: it must cut its tail first"


def _node(request: ApiRequest, action: Action = Action.ADMIN) -> ClusterNode:
    """The node, once the caller may do ``action`` on the cluster (replication reads the whole log: admin)."""
    node: ClusterNode = request.state.cluster
    request.runtime.access.authorize(request.principal, action, CLUSTER, request.scope)
    return node


def _leader(node: ClusterNode, term: int | None = None) -> None:
    if not node.writable or (term is not None and term > node.term):
        raise node.not_leader()


def _headers(**values: str) -> list[tuple[bytes, bytes]]:
    return [(name.encode(), value.encode()) for name, value in values.items()]


async def cluster_view(request: ApiRequest) -> Reply:
    return Reply(await _node(request, Action.DESCRIBE).view())


async def replication_term_end(request: ApiRequest) -> Reply:
    node = _node(request)
    _leader(node)
    asked = request.params.term
    end = node.history.end_of(asked, node.store.commit_log.end_offset)
    return Reply({"end_offset": end, "term": node.history.known_at_most(asked)}, headers=_headers(**{TERM_HEADER: str(node.term)}))


async def replication_fetch(request: ApiRequest) -> Reply:
    body = await parse_body(request, wire.FetchRequest, empty_is_missing=True)
    node = _node(request)
    _leader(node, body.term)
    log = node.store.commit_log
    end = log.end_offset
    if body.from_offset > end:
        raise Diverged(f"follower {body.node_id} asks from {body.from_offset}, the log ends at {end}")
    if _this_leadership(node, body.term):
        durable = body.from_offset if body.durable_offset is None else min(body.durable_offset, body.from_offset)
        node.tracker.report(body.node_id, durable, end, fetched=body.from_offset)
    if body.from_offset == end and (body.high_watermark is None or node.tracker.high_watermark <= body.high_watermark):
        node.appended.clear()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(FETCH_WAIT_SECONDS):  # (no task per parked fetch, as wait_for makes)
                await node.appended.wait()
        _leader(node, body.term)
        log = node.store.commit_log
        end = log.end_offset
    if body.from_offset < (log_start := node.store.log_start.offset):  # retention deleted it: catch up (cluster/catch_up.py)
        raise BehindLogStart(f"follower {body.node_id} asks from {body.from_offset}, the log starts at {log_start}", log_start=log_start)
    data = log.read_run(body.from_offset, end, FETCH_MAX_BYTES)
    headers = {TERM_HEADER: str(node.term), LOG_END_HEADER: str(end), SEGMENT_HEADER: str(log.segment_bytes),
               HIGH_WATERMARK_HEADER: str(node.tracker.high_watermark), LOG_START_HEADER: str(log_start)}
    if body.history_term != node.history.last_term:  # (None: a follower that keeps none) a leader's history is fixed while it leads
        headers[HISTORY_HEADER] = json.dumps(node.history.entries)
    if (picture := node.picture_for(body.node_id)) is not None:
        headers[SET_HEADER] = picture
    return Reply(data, headers=_headers(**headers))


async def replication_snapshot(request: ApiRequest) -> Reply:
    """A part of the leader's state snapshot file (decision 051), for a follower behind its log start or about to delete
    below it (cluster/catch_up.py), or keeping it for a promotion (cluster/promotion_snapshots.py, which asks past the
    end for the headers alone): at most ``catch_up.SNAPSHOT_PART_BYTES`` from ``offset``, of the snapshot ``entries`` names."""
    node = _node(request)
    _leader(node)
    params = request.params
    store = node.store
    try:
        data, size, entries = await asyncio.to_thread(snapshot_part, store, params.entries, params.offset)
    except FileNotFoundError as missing:
        raise StateSnapshotNotFound(str(missing)) from None
    return Reply(data, headers=_headers(**{TERM_HEADER: str(node.term), SNAPSHOT_SIZE_HEADER: str(size),
                                           SNAPSHOT_ENTRIES_HEADER: str(entries), LOG_START_HEADER: str(store.log_start.offset),
                                           HISTORY_HEADER: json.dumps(node.history.entries)}))


async def replication_ack(request: ApiRequest) -> Reply:
    """A durable report apart from a fetch: counted if it is from this leadership and above the follower's last one."""
    body = await parse_body(request, wire.AckRequest, empty_is_missing=True)
    node = _node(request)
    _leader(node, body.term)
    log_end = node.store.commit_log.end_offset
    counted = _this_leadership(node, body.term) and body.durable_offset <= log_end and node.tracker.acked(body.node_id, body.durable_offset)
    progress = node.tracker.progress.get(body.node_id)
    return Reply(wire.DurableAck(counted=counted, durable_offset=progress.durable if progress else 0,
                                 high_watermark=node.tracker.high_watermark),
                 headers=_headers(**{TERM_HEADER: str(node.term)}))


class _Stream:
    """One follower's stream on the leader: what was pushed, what the follower said it holds, whether it is gone."""

    def __init__(self, node: ClusterNode, hello: wire.FetchRequest) -> None:
        self.node = node
        self.hello = hello
        self.counts = _this_leadership(node, hello.term)
        self.sent = hello.from_offset
        self.durable = hello.from_offset if hello.durable_offset is None else min(hello.durable_offset, hello.from_offset)
        self.history_term = hello.history_term
        self.watermark = -1 if hello.high_watermark is None else hello.high_watermark
        self.gone = False
        self.blocked = False  # the in-flight bound or the follower's silence holds the next run back: an ack wakes it
        self.heard_at = asyncio.get_running_loop().time()  # the follower's last message
        self.watermark_told_at = float("-inf")  # when a run without bytes last told a moved high watermark

    def heard(self, durable: int, appended: int) -> None:
        """An ack: counted as a fetch from ``appended`` with ``durable`` on disk was (``ReplicaTracker.report``)."""
        node = self.node
        end = node.store.commit_log.end_offset
        if appended > self.sent or durable < self.durable:
            raise BadFrame(f"an ack of {durable}/{appended}: past what was pushed ({self.sent}) or below the last ({self.durable})")
        self.durable = durable
        self.heard_at = asyncio.get_running_loop().time()
        if self.counts:
            node.tracker.report(self.hello.node_id, durable, end, fetched=appended)
        if self.blocked:
            self.blocked = False
            node.appended.set()

    def next_frame(self, now: float) -> bytes | None:
        """The frame to push now: a run of new bytes (unless too many are in flight, or the follower has been silent for
        ``SILENT_SECONDS``: a stopped follower's socket does not fill with bytes it would take when it resumes, long
        after, as a fetch it no longer sends would not have taken them), else a moved high watermark at once
        but no sooner than ``WATERMARK_SECONDS`` after the last run without bytes (under load the runs carry it); None:
        nothing yet. BehindLogStart past the log start."""
        node = self.node
        _leader(node, self.hello.term)
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
                data = log.read_run(self.sent, end, RUN_MAX_BYTES)
        hwm = node.tracker.high_watermark
        if not data:
            if hwm <= self.watermark or now - self.watermark_told_at < WATERMARK_SECONDS:
                return None
            self.watermark_told_at = now
        history = None
        if self.history_term != node.history.last_term:
            history, self.history_term = node.history.entries, node.history.last_term
        frame = run_frame(RUN, node.term, self.sent, end, hwm, log_start, log.segment_bytes, data, history,
                          node.picture_for(self.hello.node_id))
        self.sent += len(data)
        self.watermark = hwm
        return frame

    def idle_frame(self) -> bytes:
        """An empty run: the leader lives (a follower that hears nothing for its read timeout reconnects)."""
        node = self.node
        store = node.store
        return run_frame(RUN, node.term, self.sent, store.commit_log.end_offset, node.tracker.high_watermark,
                         store.log_start.offset, store.commit_log.segment_bytes, picture=node.picture_for(self.hello.node_id))


async def replication_stream(scope: Scope, receive: Receive, send: Send, state: Any) -> None:
    """The replication stream's leader side (stream_frames.py, decision 054): a WebSocket on the API port, the cluster
    token checked as on every route; the follower's first message is what its first fetch was, then runs are pushed as
    the log grows and its acks are counted. A refusal closes it with 4000 + the status a route would answer and the
    problem's code as the reason (before the handshake completes: a 403 to the follower)."""
    if (await receive())["type"] != "websocket.connect":
        return
    node: ClusterNode | None = getattr(state, "cluster", None)
    if (refused := _refusal(node, scope, state)) is not None or node is None:
        refused = refused or NotLeader("this node is starting")
        await send({"type": "websocket.close", "code": 4000 + refused.status, "reason": refused.code})
        return
    await send({"type": "websocket.accept"})
    try:
        hello = await _hello(receive)
        _leader(node, hello.term)
        if hello.from_offset > (end := node.store.commit_log.end_offset):
            raise Diverged(f"follower {hello.node_id} asks from {hello.from_offset}, the log ends at {end}")
        stream = _Stream(node, hello)
        if stream.counts:
            node.tracker.report(hello.node_id, stream.durable, end, fetched=hello.from_offset)
        await _push(stream, receive, send)
    except BehindLogStart as behind:
        store = node.store
        await send({"type": "websocket.send", "bytes": run_frame(BEHIND, node.term, behind.extra["log_start"],
                    store.commit_log.end_offset, node.tracker.high_watermark, store.log_start.offset, store.commit_log.segment_bytes)})
        await send({"type": "websocket.close", "code": 4000 + behind.status, "reason": behind.code})
    except (BrokerError, BadFrame) as ended:
        status, code = (ended.status, ended.code) if isinstance(ended, BrokerError) else (400, "INVALID_REQUEST")
        log.debug("replication stream ends: %s", ended)
        with contextlib.suppress(Exception):  # (the socket may be gone already)
            await send({"type": "websocket.close", "code": 4000 + status, "reason": code})
    except (TimeoutError, OSError) as gone:  # no first message in time; the follower's socket went
        log.debug("replication stream ends: %r", gone)


def _refusal(node: ClusterNode | None, scope: Scope, state: Any) -> BrokerError | None:
    """Why the stream is refused before it opens: a node not started yet, a web page (a browser opens a WebSocket to any
    address, token or not: with auth off it would read the log), a caller without admin on the cluster."""
    if node is None:
        return NotLeader("this node is starting")
    if any(name == b"origin" for name, _ in scope.get("headers", ())):
        return OriginNotAllowed("a web page's WebSocket (it sent an Origin): the replication stream is for the set's nodes")
    try:
        runtime = state.runtime
        runtime.access.authorize(runtime.access.principal(scope), Action.ADMIN, CLUSTER, scope)
    except BrokerError as refused:
        return refused
    return None


async def _hello(receive: Any) -> wire.FetchRequest:
    """The follower's first message: where it stands, as its first fetch said (InvalidRequest unless it is one)."""
    async with asyncio.timeout(HELLO_SECONDS):
        first = await receive()
    if first["type"] != "websocket.receive" or not first.get("bytes"):
        raise InvalidRequest("the stream's first message is the follower's FetchRequest, as JSON in a binary message")
    try:
        return msgspec.json.decode(first["bytes"], type=wire.FetchRequest)
    except msgspec.DecodeError as exc:
        raise InvalidRequest(f"the stream's first message: {exc}") from None


async def _push(stream: _Stream, receive: Any, send: Any) -> None:
    """Push runs as the log grows while a task of its own counts the follower's acks; ends when either side does."""
    node = stream.node
    acks = asyncio.get_running_loop().create_task(_take_acks(stream, receive))
    loop = asyncio.get_running_loop()
    sent_at = loop.time()
    try:
        while not stream.gone:
            now = loop.time()
            frame = stream.next_frame(now)
            if frame is None and now - sent_at >= KEEPALIVE_SECONDS:
                frame = stream.idle_frame()
            if frame is not None:
                await send({"type": "websocket.send", "bytes": frame})
                sent_at = now
                continue
            wait = KEEPALIVE_SECONDS - (now - sent_at)
            if node.tracker.high_watermark > stream.watermark:
                wait = min(wait, WATERMARK_SECONDS - (now - stream.watermark_told_at))
            node.appended.clear()  # (every stream checks what there is before it waits: a set meanwhile is not missed)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(max(wait, 0.0)):
                    await node.appended.wait()
        if acks.done() and (error := acks.exception()) is not None:
            raise error
    finally:
        acks.cancel()


async def _take_acks(stream: _Stream, receive: Any) -> None:
    try:
        while True:
            message = await receive()
            if message["type"] != "websocket.receive":
                return
            stream.heard(*read_ack(message.get("bytes") or b""))
    finally:
        stream.gone = True
        stream.node.appended.set()


WEBSOCKETS: dict[str, WebSocketEndpoint] = {STREAM_PATH: replication_stream}


def _this_leadership(node: ClusterNode, term: int) -> bool:
    """A follower's report counts only if it follows this leadership's terms: else its log was not cut against it."""
    return term >= node.history.last_term


async def replication_position(request: ApiRequest) -> Reply:
    """Any node's answer, whatever its role: a node standing for election compares it with its own (``decisions.may_lead``)."""
    node = _node(request, Action.DESCRIBE)
    return Reply(position_of(node.node_id, node.term, node.history, node.store))


ROUTES = [
    Route("GET", "/v1/cluster", cluster_view, "The broker set as this node sees it (describe on the cluster)", "cluster",
          answer=wire.ClusterView, on_follower=True),
    Route("GET", "/v1/replication/term-end", replication_term_end, "Where a term ends in the leader's log (a follower's first call; admin)",
          "replication", answer=wire.TermEnd, params=TermEndParams, peer=True),
    Route("POST", "/v1/replication/fetch", replication_fetch, "The leader's log bytes from an offset; term, log end, segment size, "
          "term history, high watermark and about once a second the set's picture in headers (admin)", "replication", request=wire.FetchRequest,
          media_type="application/octet-stream", peer=True),
    Route("GET", "/v1/replication/snapshot", replication_snapshot, "A part of the leader's state snapshot file, for a follower "
          "behind its log start, about to delete below it or keeping it for a promotion (an offset past the end: an empty part); "
          "size, snapshot, log start and term history in headers (admin)",
          "replication", params=SnapshotParams, media_type="application/octet-stream", peer=True),
    Route("POST", "/v1/replication/ack", replication_ack, "A follower's fsynced log end, sent when its fsync completes while "
          "its fetch waits for new bytes (admin)", "replication", request=wire.AckRequest, answer=wire.DurableAck, peer=True),
    Route("GET", "/v1/replication/position", replication_position, "This node's last term and durable log end, on every node "
          "(asked by a node standing for election; describe)", "replication", answer=wire.Position, peer=True),
]
