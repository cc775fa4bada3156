"""Pop consumption: receive, ack, nack, group state. Parse, call the use case (halfmq.broker.usecases), answer."""

from __future__ import annotations

from halfmq import wire
from halfmq.broker.security.access import Subscriber
from halfmq.wire import ChangeInvisibleRequest, NackRequest, ReceiveRequest, ResetOffsetsRequest, SettleRequest

from ..body import parse_body
from ..front import ApiRequest, Reply
from ..params import GroupDeleteParams
from ..router import Route


def _subscriber(request: ApiRequest) -> Subscriber:
    """The right to consume the path's topic as the path's group, asked before the body is read."""
    return request.runtime.access.subscriber(request.principal, request.scope, request.path_params["group"], request.path_params["topic"])


async def receive(request: ApiRequest) -> Reply:
    subscriber = _subscriber(request)  # before the body is read
    body = await parse_body(request, ReceiveRequest)
    return Reply(await request.usecases.receiving.receive(subscriber, body, request))


async def ack(request: ApiRequest) -> Reply:
    subscriber = _subscriber(request)
    body = await parse_body(request, SettleRequest)
    return Reply(await request.usecases.settling.ack(subscriber, body.receipt_handles))


async def nack(request: ApiRequest) -> Reply:
    subscriber = _subscriber(request)
    body = await parse_body(request, NackRequest)
    return Reply(request.usecases.settling.nack(subscriber, body.receipt_handles, body.reason))


async def change_invisible_duration(request: ApiRequest) -> Reply:
    subscriber = _subscriber(request)
    body = await parse_body(request, ChangeInvisibleRequest)
    return Reply(request.usecases.settling.change_invisible_many(subscriber, body.receipt_handles, body.invisible_seconds))


async def describe_group(request: ApiRequest) -> Reply:
    return Reply(request.usecases.groups.describe(request.principal, request.scope, request.path_params["group"]))


async def reset_offsets(request: ApiRequest) -> Reply:
    group = request.path_params["group"]
    topic = request.path_params["topic"]
    request.runtime.access.group_admin(request.principal, request.scope, group)  # before the body is read
    body = await parse_body(request, ResetOffsetsRequest)
    return Reply(await request.usecases.groups.reset_offsets(request.principal, request.scope, group, topic, body))


async def delete_group(request: ApiRequest) -> Reply:
    p: GroupDeleteParams = request.params
    return Reply(await request.usecases.groups.delete_group(request.principal, request.scope, request.path_params["group"], p.force))


_HANDLES = {"receipt_handles": ["<receipt_handle from receive>"]}
_GROUP = "/v1/consumer-groups/{group}/topics/{topic}"
HOT_ROUTES = [
    Route("POST", f"{_GROUP}/receive", receive, "Receive messages (pop consumption, long poll)", "consumer-groups",
          ReceiveRequest, wire.ReceiveResponse, example={"max_messages": 16, "invisible_seconds": 30, "wait_seconds": 5}),
    Route("POST", f"{_GROUP}/ack", ack, "Ack received messages", "consumer-groups",
          SettleRequest, wire.SettleResponse, example=_HANDLES),
    Route("POST", f"{_GROUP}/nack", nack, "Nack received messages (redelivered after a back-off, then DLQ)",
          "consumer-groups", NackRequest, wire.SettleResponse, example=_HANDLES),
    Route("POST", f"{_GROUP}/change-invisible-duration", change_invisible_duration,
          "Keep received messages hidden for invisible_seconds from now (RocketMQ 5's ChangeInvisibleDuration)",
          "consumer-groups", ChangeInvisibleRequest, wire.SettleResponse, example={**_HANDLES, "invisible_seconds": 60}),
]
ROUTES = [
    Route("GET", "/v1/consumer-groups/{group}", describe_group, "A consumer group's offsets, lag and in-flight deliveries",
          "consumer-groups", answer=wire.ConsumerGroupInfo),
    Route("DELETE", "/v1/consumer-groups/{group}", delete_group,
          "Delete a consumer group: its committed offsets and progress on every topic (refused while it has deliveries "
          "in flight unless force=true)", "consumer-groups", answer=wire.GroupDeleted, params=GroupDeleteParams),
    Route("POST", f"{_GROUP}/reset-offsets", reset_offsets,
          "Reset a consumer group's committed offsets on a topic (earliest, latest, a time, a duration ago, an offset; "
          "dry_run answers the plan; refused while deliveries are in flight unless forced)", "consumer-groups",
          ResetOffsetsRequest, wire.OffsetReset, example={"to": "duration", "ago_ms": 3_600_000, "dry_run": True}),
]
