"""Topics, sends and offset reads: parse, call the use case (halfmq.broker.usecases), answer."""

from __future__ import annotations

from halfmq import wire
from halfmq.wire import SendRequest, TopicAlter, TopicCreate

from ..body import parse_body
from ..front import ApiRequest, Reply
from ..params import OffsetReadParams, TopicDeleteParams
from ..router import Route


async def send_messages(request: ApiRequest) -> Reply:
    topic = request.path_params["topic"]
    publisher = request.runtime.access.publisher(request.principal, request.scope, topic)  # before the body is read
    body = await parse_body(request, SendRequest)
    return Reply(await request.usecases.sending.send(publisher, body))


async def create_topic(request: ApiRequest) -> Reply:
    body = await parse_body(request, TopicCreate, empty_is_missing=True)
    view, created = await request.usecases.topics.create(request.principal, request.scope, body)
    return Reply(view, 201 if created else 200)


async def list_topics(request: ApiRequest) -> Reply:
    return Reply(request.usecases.topics.list_visible(request.principal))


async def describe_topic(request: ApiRequest) -> Reply:
    return Reply(request.usecases.topics.describe(request.principal, request.scope, request.path_params["topic"]))


async def alter_topic(request: ApiRequest) -> Reply:
    body = await parse_body(request, TopicAlter, empty_is_missing=True)
    return Reply(await request.usecases.topics.alter(request.principal, request.scope, request.path_params["topic"], body))


async def delete_topic(request: ApiRequest) -> Reply:
    p: TopicDeleteParams = request.params
    return Reply(await request.usecases.topics.delete(request.principal, request.scope, request.path_params["topic"], p.force))


async def read_messages(request: ApiRequest) -> Reply:
    p: OffsetReadParams = request.params
    topic = request.path_params["topic"]
    return Reply(request.usecases.topics.read_messages(request.principal, request.scope, topic, p.queue_id, p.offset, p.max))


HOT_ROUTES = [
    Route("POST", "/v1/topics/{topic}/messages", send_messages, "Send messages to a topic", "topics",
          SendRequest, wire.SendResponse, example={"messages": [{"body": "order 42 paid", "keys": ["42"], "tag": "paid"}]}),
]
ROUTES = [
    Route("POST", "/v1/topics", create_topic, "Create a topic (200 when it exists with the same queues)", "topics",
          TopicCreate, wire.TopicInfo, status=201, example={"name": "ORDER_PAID", "queues": 4, "retention_ms": 86400000}),
    Route("GET", "/v1/topics", list_topics, "List the topics the caller may see", "topics", answer=wire.TopicList,
          on_follower=True),
    Route("GET", "/v1/topics/{topic}", describe_topic, "Describe a topic", "topics", answer=wire.TopicInfo, on_follower=True),
    Route("PATCH", "/v1/topics/{topic}", alter_topic,
          "Change a topic's own retention (a field left out stays; null: the broker's)", "topics", TopicAlter,
          wire.TopicInfo, example={"retention_ms": 86400000, "retention_bytes": None}),
    Route("DELETE", "/v1/topics/{topic}", delete_topic,
          "Delete a topic: no longer listed or read, every group's offsets on it gone (refused while it has pending "
          "half messages or deliveries in flight unless force=true)", "topics", answer=wire.TopicDeleted,
          params=TopicDeleteParams),
    Route("GET", "/v1/topics/{topic}/queues/{queue_id}/messages", read_messages, "Read a queue by offset", "topics",
          answer=wire.OffsetReadResponse, params=OffsetReadParams, on_follower=True),
]
