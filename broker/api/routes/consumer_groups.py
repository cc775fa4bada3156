"""Pop consumption: receive, ack, nack, group state."""

from __future__ import annotations

import time

from fastapi import APIRouter, Request

from halfmq.broker.message_view import message_view
from halfmq.broker.protocol import ReceiveRequest, SettleRequest
from halfmq.broker.security.policy import Action, Resource

from .. import answers
from ..body import StrictJsonRoute, parse_body
from ..hot_path import HotRequest, Reply
from ..responses import JsonResponse
from ..route_table import HotRouteSpec
from ..runtime import BrokerRuntime

router = APIRouter(prefix="/v1/consumer-groups", route_class=StrictJsonRoute)


def _runtime(request: Request) -> BrokerRuntime:
    return request.app.state.runtime


async def receive(request: HotRequest) -> Reply:
    group = request.path_params["group"]
    topic = request.path_params["topic"]
    rt = request.runtime
    rt.guard.require(request.scope, Action.SUBSCRIBE, Resource.group(group), Resource.topic(topic))
    body = await parse_body(request, ReceiveRequest)
    started = time.perf_counter()
    # First without waiting: messages found at once go straight back. The client asked for them
    # a moment ago, so the hang-up probe (a few ms on granian) is only worth it after a held poll.
    deliveries = await rt.delivery.receive(group, topic, body.max_messages, body.invisible_seconds, 0.0)
    if not deliveries and body.wait_seconds > 0:
        deliveries = await rt.delivery.receive(group, topic, body.max_messages, body.invisible_seconds, body.wait_seconds)
        if deliveries and await request.is_disconnected():
            # The long-poller hung up: hand the messages back instead of hiding them until they expire.
            rt.delivery.release(group, topic, [d.receipt_handle for d in deliveries])
            return Reply({"messages": []})
    messages = []
    for d in deliveries:
        view = message_view(d.message)
        view["receipt_handle"] = d.receipt_handle
        view["delivery_attempt"] = d.delivery_attempt
        messages.append(view)
    if messages:
        rt.metrics.messages_out.inc(len(messages))
        rt.metrics.receive_latency.observe(time.perf_counter() - started)
    return Reply({"messages": messages})


def _settled(results: list[tuple[str, bool]]) -> dict:
    return {"results": [{"receipt_handle": h, "status": "OK" if ok else "EXPIRED"} for h, ok in results]}


async def ack(request: HotRequest) -> Reply:
    group = request.path_params["group"]
    topic = request.path_params["topic"]
    rt = request.runtime
    rt.guard.require(request.scope, Action.SUBSCRIBE, Resource.group(group), Resource.topic(topic))
    body = await parse_body(request, SettleRequest)
    results = rt.delivery.ack(group, topic, body.receipt_handles)
    for _, ok in results:
        rt.metrics.acks.labels("ok" if ok else "expired").inc()
    return Reply(_settled(results))


async def nack(request: HotRequest) -> Reply:
    group = request.path_params["group"]
    topic = request.path_params["topic"]
    rt = request.runtime
    rt.guard.require(request.scope, Action.SUBSCRIBE, Resource.group(group), Resource.topic(topic))
    body = await parse_body(request, SettleRequest)
    results = rt.delivery.nack(group, topic, body.receipt_handles)
    for _, ok in results:
        rt.metrics.nacks.labels("ok" if ok else "expired").inc()
    return Reply(_settled(results))


@router.get("/{group}", response_model=answers.GroupLag)
async def describe_group(group: str, request: Request) -> JsonResponse:
    rt = _runtime(request)
    rt.guard.require(request.scope, Action.DESCRIBE, Resource.group(group))
    lag = rt.delivery.group_lag(group)
    return JsonResponse({
        "group": group,
        "topics": [
            {"topic": topic, "queues": [
                {"queue_id": q.queue_id, "committed_offset": q.committed_offset, "max_offset": q.max_offset, "lag": q.lag, "in_flight": q.in_flight}
                for q in rows
            ]}
            for topic, rows in lag.items()
        ],
    })


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
