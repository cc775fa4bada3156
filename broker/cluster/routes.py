"""A broker set's HTTP endpoints: the cluster view and the replication calls followers make.

Thin: the node and the store decide; these only translate.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from fastapi import APIRouter, Request, Response
from pydantic import BaseModel, Field

from halfmq.broker.security.policy import CLUSTER, Action
from halfmq.broker.store.atomic_file import read_json

from .errors import NotLeader
from .follower import HIGH_WATERMARK_HEADER, HISTORY_HEADER, SEGMENT_HEADER, TERM_HEADER
from .node import ClusterNode

router = APIRouter()
FETCH_MAX_BYTES = 1 << 20
FETCH_WAIT_SECONDS = 0.5


class FetchRequest(BaseModel):
    node_id: str = Field(min_length=1, max_length=200)
    term: int = Field(ge=0)
    from_offset: int = Field(ge=0)
    high_watermark: int | None = Field(default=None, ge=0)  # the follower's: a fetch waits for new bytes only while it is current


class Diverged(NotLeader):
    code = "REPLICA_DIVERGED"
    status = 409
    title = "The follower's log is longer than the leader's: it must cut its tail first"


def _node(request: Request, action: Action = Action.ADMIN) -> ClusterNode:
    """The node, once the caller may do ``action`` on the cluster (replication reads the whole log: admin)."""
    node: ClusterNode = request.app.state.cluster
    node.runtime.guard.require(request.scope, action, CLUSTER)
    return node


def _leader(node: ClusterNode, term: int | None = None) -> None:
    if not node.writable or (term is not None and term > node.term):
        raise node.not_leader()


@router.get("/v1/cluster")
async def cluster_view(request: Request) -> dict[str, Any]:
    return await _node(request, Action.DESCRIBE).view()


@router.get("/v1/replication/term-end")
async def term_end(request: Request, term: int, node_id: str) -> Response:
    node = _node(request)
    _leader(node)
    end = node.history.end_of(term, node.runtime.store.commit_log.end_offset)
    return Response(json.dumps({"end_offset": end}), media_type="application/json", headers={TERM_HEADER: str(node.term)})


@router.post("/v1/replication/fetch")
async def fetch(body: FetchRequest, request: Request) -> Response:
    node = _node(request)
    _leader(node, body.term)
    log = node.runtime.store.commit_log
    end = log.end_offset
    if body.from_offset > end:
        raise Diverged(f"follower {body.node_id} asks from {body.from_offset}, the log ends at {end}")
    node.tracker.report(body.node_id, body.from_offset, end)
    if body.from_offset == end and (body.high_watermark is None or node.tracker.high_watermark <= body.high_watermark):
        node.appended.clear()
        try:
            await asyncio.wait_for(node.appended.wait(), FETCH_WAIT_SECONDS)
        except TimeoutError:
            pass
        _leader(node, body.term)
        log = node.runtime.store.commit_log
        end = log.end_offset
    later = [b for b in log.segment_bases() if b > body.from_offset]
    stop = min(end, later[0] if later else end, body.from_offset + FETCH_MAX_BYTES)
    data = log.read(body.from_offset, stop - body.from_offset) if stop > body.from_offset else b""
    return Response(data, media_type="application/octet-stream", headers={
        TERM_HEADER: str(node.term), "x-halfmq-log-end": str(end), SEGMENT_HEADER: str(log.segment_bytes),
        HISTORY_HEADER: json.dumps(node.history.entries), HIGH_WATERMARK_HEADER: str(node.tracker.high_watermark),
    })


@router.get("/v1/replication/state")
async def state(request: Request) -> dict[str, Any]:
    node = _node(request)
    _leader(node)
    store = node.runtime.store
    offsets = {g: {t: {str(q): o for q, o in qs.items()} for t, qs in store.offsets.topics_of(g).items()} for g in store.offsets.groups()}
    return {"term": node.term, "offsets": offsets, "receipt_key": read_json(node.settings.data_dir / "receipt-key.json", None)}
