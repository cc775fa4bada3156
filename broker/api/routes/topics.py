"""Topics, sends and offset reads: parse, call the use case (halfmq.broker.usecases), answer."""

from __future__ import annotations

from fastapi import APIRouter, Query, Request

from halfmq.broker.protocol import SendRequest, TopicCreate
from halfmq.broker.usecases import sending
from halfmq.broker.usecases import topics as use

from .. import answers
from ..body import StrictJsonRoute, parse_body
from ..hot_path import HotRequest, Reply
from ..responses import JsonResponse
from ..route_table import HotRouteSpec
from ..runtime import runtime_of

router = APIRouter(prefix="/v1/topics", route_class=StrictJsonRoute)


@router.post("", response_model=answers.TopicView)
async def create_topic(body: TopicCreate, request: Request) -> JsonResponse:
    rt = runtime_of(request)
    view, created = use.create(rt, rt.guard.principal(request.scope), request.scope, body)
    return JsonResponse(view, status_code=201 if created else 200)


@router.get("", response_model=answers.TopicList)
async def list_topics(request: Request) -> JsonResponse:
    rt = runtime_of(request)
    return JsonResponse(use.list_visible(rt, rt.guard.principal(request.scope)))


@router.get("/{topic}", response_model=answers.TopicView)
async def describe_topic(topic: str, request: Request) -> JsonResponse:
    rt = runtime_of(request)
    return JsonResponse(use.describe(rt, rt.guard.principal(request.scope), request.scope, topic))


async def send_messages(request: HotRequest) -> Reply:
    topic = request.path_params["topic"]
    rt = request.runtime
    who = sending.publisher(rt, rt.guard.principal(request.scope), request.scope, topic)  # before the body is read
    body = await parse_body(request, SendRequest)
    return Reply(await sending.send(rt, who, topic, body))


@router.get("/{topic}/queues/{queue_id}/messages", response_model=answers.MessagePage)
async def read_messages(
    topic: str,
    queue_id: int,
    request: Request,
    offset: int = Query(0, ge=0),
    max: int = Query(32, ge=1, le=1000),  # noqa: A002 - the API's query parameter is called max
) -> JsonResponse:
    rt = runtime_of(request)
    return JsonResponse(use.read_messages(rt, rt.guard.principal(request.scope), request.scope, topic, queue_id, offset, max))


# Hot paths as raw ASGI routes (see hot_path.py); the app factory mounts them.
HOT_ROUTES = [
    HotRouteSpec("POST", "/v1/topics/{topic}/messages", send_messages, SendRequest, answers.SendAnswer,
                 "Send messages to a topic", "topics",
                 {"messages": [{"body": "order 42 paid", "keys": ["42"], "tag": "paid"}]}),
]
