"""A broker set's HTTP endpoints: the cluster view and the replication calls followers make.

Thin: the node and the store decide; these only translate. Routes of the one table
(broker/api/router.py), added to it in a broker set only (``create_app``), so the
front serves them and /openapi.json documents them like every other /v1 route.
"""

from __future__ import annotations

import asyncio
import contextlib
import json

from pydantic import BaseModel, Field

from halfmq import wire
from halfmq.broker.api.body import parse_body
from halfmq.broker.api.front import ApiRequest, Reply
from halfmq.broker.api.router import Route
from halfmq.broker.cluster.catch_up import LOG_START_HEADER, SNAPSHOT_ENTRIES_HEADER, SNAPSHOT_SIZE_HEADER, snapshot_part
from halfmq.broker.cluster.follower import HIGH_WATERMARK_HEADER, HISTORY_HEADER, SEGMENT_HEADER, SET_HEADER, TERM_HEADER
from halfmq.broker.cluster.node import ClusterNode
from halfmq.broker.cluster.positions import position_of
from halfmq.broker.security.policy import CLUSTER, Action
from halfmq.errors import BehindLogStart, NotLeader, StateSnapshotNotFound

FETCH_MAX_BYTES = 1 << 20
FETCH_WAIT_SECONDS = 0.5
LOG_END_HEADER = "x-halfmq-log-end"


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
    later = [b for b in log.segment_bases() if b > body.from_offset]
    stop = min(end, later[0] if later else end, body.from_offset + FETCH_MAX_BYTES)
    data = log.read(body.from_offset, stop - body.from_offset) if stop > body.from_offset else b""
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
