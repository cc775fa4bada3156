"""Operators' views and actions that no producer or consumer needs: group listing, DLQ list, resend and bulk redrive.

All admin-guarded like the transaction operator routes (``admin`` on the cluster
for listings, on the group for a DLQ). Thin: halfmq.broker.usecases.groups.
"""

from __future__ import annotations

from halfmq import wire
from halfmq.wire import DlqRedriveRequest

from ..body import parse_body
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


async def start_redrive(request: ApiRequest) -> Reply:
    group = request.path_params["group"]
    request.runtime.access.group_admin(request.principal, request.scope, group)  # before the body is read
    body = await parse_body(request, DlqRedriveRequest)
    return Reply(request.usecases.groups.start_redrive(request.principal, request.scope, group, body.max_messages,
                                                       body.rate_per_second), status=202)


async def redrive(request: ApiRequest) -> Reply:
    return Reply(request.usecases.groups.redrive(request.principal, request.scope, request.path_params["group"]))


async def stop_redrive(request: ApiRequest) -> Reply:
    return Reply(request.usecases.groups.stop_redrive(request.principal, request.scope, request.path_params["group"]))


_REDRIVE = "/v1/consumer-groups/{group}/dlq/redrive"
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
    Route("POST", _REDRIVE, start_redrive,
          "Start resending the group's dead letters (all there now, or max_messages) to their topics at a rate, in the "
          "background; one at a time per group", "operators", DlqRedriveRequest, wire.DlqRedrive, status=202,
          example={"max_messages": 1000, "rate_per_second": 50}),
    Route("GET", _REDRIVE, redrive, "The group's latest DLQ redrive: state and progress", "operators", answer=wire.DlqRedrive),
    Route("DELETE", _REDRIVE, stop_redrive, "Stop the group's running DLQ redrive (what was resent stays resent)", "operators",
          answer=wire.DlqRedrive),
]
