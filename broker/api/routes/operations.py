"""Health and metrics for operators."""

from __future__ import annotations

from fastapi import APIRouter, Request
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.responses import Response

from halfmq.broker.usecases import operator_actions, views

from .. import answers
from ..body import StrictJsonRoute
from ..responses import JsonResponse
from ..runtime import runtime_of

router = APIRouter(route_class=StrictJsonRoute)


@router.get("/healthz", response_model=answers.Health)
async def healthz(request: Request) -> JsonResponse:
    return JsonResponse(views.health(runtime_of(request)))


@router.get("/metrics")
async def metrics(request: Request) -> Response:
    rt = runtime_of(request)
    operator_actions.cluster_admin(rt, rt.guard.principal(request.scope), request.scope)
    return Response(generate_latest(rt.metrics.registry), media_type=CONTENT_TYPE_LATEST)
