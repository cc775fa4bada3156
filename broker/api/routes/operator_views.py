"""Operators' views and actions that no producer or consumer needs: group listing, DLQ list and resend.

All admin-guarded like the transaction operator routes (``admin`` on the cluster
for listings, on the group for a DLQ). Thin: halfmq.broker.usecases.groups.
"""

from __future__ import annotations

from halfmq import wire

from ..front import ApiRequest, Reply
from ..params import DlqParams, DlqResendParams, GroupListParams
from ..router import Route


async def list_groups(request: ApiRequest) -> Reply:
    p: GroupListParams = request.params
    return Reply(request.usecases.groups.list_groups(request.principal, request.scope, p.system))


async def list_dlq(request: ApiRequest) -> Reply:
    p: DlqParams = request.params
    group = request.path_params["group"]
    return Reply(request.usecases.groups.list_dlq(request.principal, request.scope, group, p.offset, p.max))


async def resend_dlq(request: ApiRequest) -> Reply:
    p: DlqResendParams = request.params
    group = request.path_params["group"]
    return Reply(await request.usecases.groups.resend_dlq(request.principal, request.scope, group, p.offset))


ROUTES = [
    Route("GET", "/v1/consumer-groups", list_groups,
          "Every consumer group with its total lag, in-flight deliveries, retries and DLQ depth "
          "(the broker's own bookkeeping readers only with system=true)", "operators",
          answer=wire.GroupList, params=GroupListParams),
    Route("GET", "/v1/consumer-groups/{group}/dlq", list_dlq, "A consumer group's dead letters", "operators",
          answer=wire.DeadLetters, params=DlqParams, on_follower=True),
    Route("POST", "/v1/consumer-groups/{group}/dlq/{offset}/resend", resend_dlq,
          "Put a DLQ message back on its own topic and queue (it is delivered again)", "operators",
          answer=wire.DlqResent, params=DlqResendParams),
]
