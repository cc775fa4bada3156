"""Operators' views and actions that no producer or consumer needs: group listing, DLQ list and resend, broker set.

All admin-guarded like the transaction operator routes (``admin`` on the cluster
for listings, on the group for a DLQ). Thin: the DLQ logic is
halfmq.broker.delivery.dead_letters.
"""

from __future__ import annotations

from fastapi import APIRouter, Query, Request

from halfmq.broker.delivery import dead_letters
from halfmq.broker.message_view import message_view
from halfmq.broker.security.policy import CLUSTER, Action, Resource
from halfmq.broker.store.topics import is_system_topic

from .. import answers
from ..body import StrictJsonRoute
from ..responses import JsonResponse
from ..runtime import BrokerRuntime

router = APIRouter(prefix="/v1/consumer-groups", route_class=StrictJsonRoute, tags=["operators"])


def _runtime(request: Request) -> BrokerRuntime:
    return request.app.state.runtime


def group_summary(rt: BrokerRuntime, group: str) -> dict:
    lag = in_flight = 0
    topics = []
    for topic, rows in rt.delivery.group_lag(group).items():
        lag += sum(q.lag for q in rows)
        in_flight += sum(q.in_flight for q in rows)
        topics.append(topic)
    return {"group": group, "topics": topics, "lag": lag, "in_flight": in_flight,
            "retrying": rt.delivery.retrying(group), "dlq_depth": dead_letters.depth(rt.store, group)}


@router.get("", response_model=answers.GroupList)
async def list_groups(request: Request, system: bool = Query(False)) -> JsonResponse:
    """Every consumer group with its total lag, in-flight deliveries, retries and DLQ depth.

    The broker's own bookkeeping readers (e.g. CID_SYS_RMQ_TRANS over the half topics) only with ``system=true``.
    """
    rt = _runtime(request)
    rt.guard.require(request.scope, Action.ADMIN, CLUSTER)
    groups = [group_summary(rt, g) for g in rt.delivery.groups()]
    if not system:
        groups = [g for g in groups if not g["topics"] or not all(is_system_topic(t) for t in g["topics"])]
    return JsonResponse({"count": len(groups), "groups": groups})


@router.get("/{group}/dlq", response_model=answers.DeadLetters)
async def list_dlq(group: str, request: Request, offset: int = Query(0, ge=0), max: int = Query(100, ge=1, le=1000)) -> JsonResponse:  # noqa: A002
    rt = _runtime(request)
    rt.guard.require(request.scope, Action.ADMIN, Resource.group(group))
    messages = [message_view(m) for m in dead_letters.dead_letters(rt.store, group, offset, max)]
    return JsonResponse({"group": group, "depth": dead_letters.depth(rt.store, group), "messages": messages})


@router.post("/{group}/dlq/{offset}/resend", response_model=answers.DlqResent)
async def resend_dlq(group: str, offset: int, request: Request) -> JsonResponse:
    """Put a DLQ message back on its own topic and queue (it is delivered again)."""
    rt = _runtime(request)
    rt.guard.require(request.scope, Action.ADMIN, Resource.group(group))
    if offset < 0:
        offset = -1  # an unknown offset, answered 404 below
    item = dead_letters.resend_item(rt.store, group, offset)
    [result], end = rt.store.put([item])
    await rt.durable(end)
    return JsonResponse({"group": group, "dlq_offset": offset, "msg_id": item.properties.get("UNIQ_KEY", ""),
                         "topic": result.topic, "queue_id": result.queue_id, "queue_offset": result.queue_offset,
                         "commit_log_offset": result.commit_log_offset})
