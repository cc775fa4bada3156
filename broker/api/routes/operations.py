"""Health and metrics for operators."""

from __future__ import annotations

from prometheus_client import CONTENT_TYPE_LATEST

from halfmq import wire
from halfmq.broker.cluster.node_view import set_reading

from ..front import ApiRequest, Reply
from ..router import Route


async def healthz(request: ApiRequest) -> Reply:
    return Reply(request.usecases.views.health())


async def metrics(request: ApiRequest) -> Reply:
    rt = request.runtime
    rt.access.cluster_admin(request.principal, request.scope)
    node = getattr(request.state, "cluster", None)  # a broker set's node: its series and role (followers count sends apart)
    reading = set_reading(node) if node is not None else None
    return Reply(await rt.operator_metrics.text(reading))  # the route's media type; read a slice at a time, written off the loop


ROUTES = [
    Route("GET", "/healthz", healthz, "Liveness and the store's offsets (no token needed)", "operations",
          answer=wire.Health, public=True, on_follower=True),
    Route("GET", "/metrics", metrics, "Prometheus metrics (admin on the cluster)", "operations",
          media_type=CONTENT_TYPE_LATEST, on_follower=True),
]
