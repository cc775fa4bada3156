"""Pop consumption: receive, ack, nack, group state. Parse, call the use case (halfmq.broker.usecases), answer."""

from __future__ import annotations

from fastapi import APIRouter, Request

from halfmq.broker.protocol import ReceiveRequest, SettleRequest
from halfmq.broker.usecases import groups, receiving, settling

from .. import answers
from ..body import StrictJsonRoute, parse_body
from ..hot_path import HotRequest, Reply
from ..responses import JsonResponse
from ..route_table import HotRouteSpec
from ..runtime import runtime_of

router = APIRouter(prefix="/v1/consumer-groups", route_class=StrictJsonRoute)


async def receive(request: HotRequest) -> Reply:
    group = request.path_params["group"]
    topic = request.path_params["topic"]
    rt = request.runtime
    receiving.subscriber(rt, rt.guard.principal(request.scope), request.scope, group, topic)  # before the body is read
    body = await parse_body(request, ReceiveRequest)
    return Reply(await receiving.receive(rt, group, topic, body, request))


async def ack(request: HotRequest) -> Reply:
    group = request.path_params["group"]
    topic = request.path_params["topic"]
    rt = request.runtime
    receiving.subscriber(rt, rt.guard.principal(request.scope), request.scope, group, topic)
    body = await parse_body(request, SettleRequest)
    return Reply(settling.ack(rt, group, topic, body.receipt_handles))


async def nack(request: HotRequest) -> Reply:
    group = request.path_params["group"]
    topic = request.path_params["topic"]
    rt = request.runtime
    receiving.subscriber(rt, rt.guard.principal(request.scope), request.scope, group, topic)
    body = await parse_body(request, SettleRequest)
    return Reply(settling.nack(rt, group, topic, body.receipt_handles))


@router.get("/{group}", response_model=answers.GroupLag)
async def describe_group(group: str, request: Request) -> JsonResponse:
    rt = runtime_of(request)
    return JsonResponse(groups.describe(rt, rt.guard.principal(request.scope), request.scope, group))


# Hot paths as raw ASGI routes (see hot_path.py); the app factory mounts them.
_HANDLES = {"receipt_handles": ["<receipt_handle from receive>"]}
HOT_ROUTES = [
    HotRouteSpec("POST", "/v1/consumer-groups/{group}/topics/{topic}/receive", receive, ReceiveRequest, answers.ReceiveAnswer,
                 "Receive messages (pop consumption, long poll)", "consumer-groups",
                 {"max_messages": 16, "invisible_seconds": 30, "wait_seconds": 5}),
    HotRouteSpec("POST", "/v1/consumer-groups/{group}/topics/{topic}/ack", ack, SettleRequest, answers.SettleAnswer,
                 "Ack received messages", "consumer-groups", _HANDLES),
    HotRouteSpec("POST", "/v1/consumer-groups/{group}/topics/{topic}/nack", nack, SettleRequest, answers.SettleAnswer,
                 "Nack received messages (redelivered after a back-off, then DLQ)", "consumer-groups", _HANDLES),
]
