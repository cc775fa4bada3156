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
from halfmq.broker.api.front import ApiRequest, Reply, WebSocketEndpoint
from halfmq.broker.api.router import Route
from halfmq.broker.cluster.catch_up import LOG_START_HEADER, SNAPSHOT_ENTRIES_HEADER, SNAPSHOT_SIZE_HEADER, snapshot_part
from halfmq.broker.cluster.follower import HISTORY_HEADER, STREAM_PATH, TERM_HEADER
from halfmq.broker.cluster.node import ClusterNode
from halfmq.broker.cluster.positions import position_of
from halfmq.broker.cluster.replication_stream import StreamDecision, behind_frame, check_leader, push
from halfmq.broker.cluster.stream_frames import BadFrame
from halfmq.broker.security.policy import CLUSTER, Action
from halfmq.errors import BehindLogStart, BrokerError, InvalidRequest, NotLeader, OriginNotAllowed, StateSnapshotNotFound

log = logging.getLogger(__name__)

HELLO_SECONDS = 5.0  # a stream whose first message (the follower's FetchRequest) takes longer is closed


class TermEndParams(BaseModel):
    term: int
    node_id: str


class SnapshotParams(BaseModel):
    node_id: str
    offset: int = Field(0, ge=0)
    entries: int | None = Field(None, ge=0)  # the snapshot the earlier parts were of (None: the newest)


def _node(request: ApiRequest, action: Action = Action.ADMIN) -> ClusterNode:
    """The node, once the caller may do ``action`` on the cluster (replication reads the whole log: admin)."""
    node: ClusterNode = request.state.cluster
    request.runtime.access.authorize(request.principal, action, CLUSTER, request.scope)
    return node


def _headers(**values: str) -> list[tuple[bytes, bytes]]:
    return [(name.encode(), value.encode()) for name, value in values.items()]


async def cluster_view(request: ApiRequest) -> Reply:
    return Reply(await _node(request, Action.DESCRIBE).view())


async def replication_term_end(request: ApiRequest) -> Reply:
    node = _node(request)
    check_leader(node)
    asked = request.params.term
    end = node.history.end_of(asked, node.store.commit_log.end_offset)
    return Reply({"end_offset": end, "term": node.history.known_at_most(asked)}, headers=_headers(**{TERM_HEADER: str(node.term)}))


async def replication_snapshot(request: ApiRequest) -> Reply:
    """A part of the leader's state snapshot file (decision 051), for a follower behind its log start or about to delete
    below it (cluster/catch_up.py), or keeping it for a promotion (cluster/promotion_snapshots.py, which asks past the
    end for the headers alone): at most ``catch_up.SNAPSHOT_PART_BYTES`` from ``offset``, of the snapshot ``entries`` names."""
    node = _node(request)
    check_leader(node)
    params = request.params
    store = node.store
    try:
        data, size, entries = await asyncio.to_thread(snapshot_part, store, params.entries, params.offset)
    except FileNotFoundError as missing:
        raise StateSnapshotNotFound(str(missing)) from None
    return Reply(data, headers=_headers(**{TERM_HEADER: str(node.term), SNAPSHOT_SIZE_HEADER: str(size),
                                           SNAPSHOT_ENTRIES_HEADER: str(entries), LOG_START_HEADER: str(store.log_start.offset),
                                           HISTORY_HEADER: json.dumps(node.history.entries)}))


async def replication_stream(scope: Scope, receive: Receive, send: Send, state: Any) -> None:
    """The replication stream's leader side (decision 054), adapted to ASGI: a WebSocket on the API port, the cluster
    token checked as on every route; the follower's first message says where it stands (a ``wire.FetchRequest``), then
    cluster/replication_stream.py decides what to push and counts the acks; this only hands frames in and out. A
    refusal closes it with 4000 + the status a route would answer and the problem's code as the reason (before the
    handshake completes: a 403 to the follower)."""
    if (await receive())["type"] != "websocket.connect":
        return
    node: ClusterNode | None = getattr(state, "cluster", None)
    if (refused := _refusal(node, scope, state)) is not None or node is None:
        refused = refused or NotLeader("this node is starting")
        await send({"type": "websocket.close", "code": 4000 + refused.status, "reason": refused.code})
        return
    await send({"type": "websocket.accept"})
    loop = asyncio.get_running_loop()
    try:
        stream = StreamDecision(node, await _hello(receive), loop.time())

        async def frames_in() -> bytes | None:
            message = await receive()
            return (message.get("bytes") or b"") if message["type"] == "websocket.receive" else None

        async def frames_out(frame: bytes) -> None:
            await send({"type": "websocket.send", "bytes": frame})

        await push(stream, frames_in, frames_out, loop.time)
    except BehindLogStart as behind:
        await send({"type": "websocket.send", "bytes": behind_frame(node, behind.extra["log_start"])})
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
    """The follower's first message: where it stands (InvalidRequest unless it is one)."""
    async with asyncio.timeout(HELLO_SECONDS):
        first = await receive()
    if first["type"] != "websocket.receive" or not first.get("bytes"):
        raise InvalidRequest("the stream's first message is the follower's FetchRequest, as JSON in a binary message")
    try:
        return msgspec.json.decode(first["bytes"], type=wire.FetchRequest)
    except msgspec.DecodeError as exc:
        raise InvalidRequest(f"the stream's first message: {exc}") from None


WEBSOCKETS: dict[str, WebSocketEndpoint] = {STREAM_PATH: replication_stream}


async def replication_position(request: ApiRequest) -> Reply:
    """Any node's answer, whatever its role: a node standing for election compares it with its own (``decisions.may_lead``)."""
    node = _node(request, Action.DESCRIBE)
    return Reply(position_of(node.node_id, node.term, node.history, node.store))


ROUTES = [
    Route("GET", "/v1/cluster", cluster_view, "The broker set as this node sees it (describe on the cluster)", "cluster",
          answer=wire.ClusterView, on_follower=True),
    Route("GET", "/v1/replication/term-end", replication_term_end, "Where a term ends in the leader's log (a follower's first call; admin)",
          "replication", answer=wire.TermEnd, params=TermEndParams, peer=True),
    Route("GET", "/v1/replication/snapshot", replication_snapshot, "A part of the leader's state snapshot file, for a follower "
          "behind its log start, about to delete below it or keeping it for a promotion (an offset past the end: an empty part); "
          "size, snapshot, log start and term history in headers (admin)",
          "replication", params=SnapshotParams, media_type="application/octet-stream", peer=True),
    Route("GET", "/v1/replication/position", replication_position, "This node's last term and durable log end, on every node "
          "(asked by a node standing for election; describe)", "replication", answer=wire.Position, peer=True),
]
