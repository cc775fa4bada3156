"""Health and metrics for operators."""

from __future__ import annotations

from fastapi import APIRouter, Request
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.responses import Response

from halfmq.broker.security.policy import CLUSTER, Action

from .. import answers
from ..body import StrictJsonRoute
from ..responses import JsonResponse

router = APIRouter(route_class=StrictJsonRoute)


@router.get("/healthz", response_model=answers.Health)
async def healthz(request: Request) -> JsonResponse:
    rt = request.app.state.runtime
    store = rt.store
    return JsonResponse({
        "status": "ok",  # no pid: the route answers without a token, and a pid is a target for kill -9 (issue 30)
        "commit_log_end_offset": store.commit_log.end_offset,
        "flushed_offset": store.flushed_offset,
        "flush_mode": rt.settings.flush_mode,
        "topics": len(store.topics.all()),
        "store_problem": store.write_problem,  # why writes answer STORE_UNAVAILABLE, if they do
        "recovery_seconds": round(store.recovery.seconds, 4),
    })


@router.get("/metrics")
async def metrics(request: Request) -> Response:
    request.app.state.runtime.guard.require(request.scope, Action.ADMIN, CLUSTER)
    return Response(generate_latest(request.app.state.runtime.metrics.registry), media_type=CONTENT_TYPE_LATEST)
