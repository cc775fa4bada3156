"""Operators' views and actions that no producer or consumer needs: group listing, DLQ list and resend.

All admin-guarded like the transaction operator routes (``admin`` on the cluster
for listings, on the group for a DLQ). Thin: halfmq.broker.usecases.groups.
"""

from __future__ import annotations

from fastapi import APIRouter, Query, Request

from halfmq.broker.usecases import groups

from .. import answers
from ..body import StrictJsonRoute
from ..responses import JsonResponse
from ..runtime import runtime_of

router = APIRouter(prefix="/v1/consumer-groups", route_class=StrictJsonRoute, tags=["operators"])


@router.get("", response_model=answers.GroupList)
async def list_groups(request: Request, system: bool = Query(False)) -> JsonResponse:
    """Every consumer group with its total lag, in-flight deliveries, retries and DLQ depth.

    The broker's own bookkeeping readers (e.g. CID_SYS_RMQ_TRANS over the half topics) only with ``system=true``.
    """
    rt = runtime_of(request)
    return JsonResponse(groups.list_groups(rt, rt.guard.principal(request.scope), request.scope, system))


@router.get("/{group}/dlq", response_model=answers.DeadLetters)
async def list_dlq(group: str, request: Request, offset: int = Query(0, ge=0), max: int = Query(100, ge=1, le=1000)) -> JsonResponse:  # noqa: A002
    rt = runtime_of(request)
    return JsonResponse(groups.list_dlq(rt, rt.guard.principal(request.scope), request.scope, group, offset, max))


@router.post("/{group}/dlq/{offset}/resend", response_model=answers.DlqResent)
async def resend_dlq(group: str, offset: int, request: Request) -> JsonResponse:
    """Put a DLQ message back on its own topic and queue (it is delivered again)."""
    rt = runtime_of(request)
    return JsonResponse(await groups.resend_dlq(rt, rt.guard.principal(request.scope), request.scope, group, offset))
