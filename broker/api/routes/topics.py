"""Topics, sends and offset reads."""

from __future__ import annotations

import builtins
import time
from typing import Any

from fastapi import APIRouter, Query, Request

from halfmq.broker.idempotence.producer_ids import SendKey, sent_messages
from halfmq.broker.idempotence.producer_records import SendKind
from halfmq.broker.idempotence.send_window import Verdict
from halfmq.broker.message_view import message_view
from halfmq.broker.producer_answers import sent_json
from halfmq.broker.protocol import SendRequest, TopicCreate
from halfmq.broker.security.policy import Action, Principal, Resource
from halfmq.broker.store.damaged_records import DamagedEntry
from halfmq.broker.store.flush_waiter import FlushTimedOut
from halfmq.broker.store.topics import TopicConfig
from halfmq.errors import InvalidQueueId, InvalidRequest
from halfmq.wire import SendStatus

from .. import answers
from ..body import StrictJsonRoute, parse_body
from ..hot_path import HotRequest, Reply
from ..responses import JsonResponse
from ..route_table import HotRouteSpec
from ..runtime import BrokerRuntime

router = APIRouter(prefix="/v1/topics", route_class=StrictJsonRoute)


def _runtime(request: Request) -> BrokerRuntime:
    return request.app.state.runtime


def topic_view(rt: BrokerRuntime, cfg: TopicConfig) -> dict:
    queues = []
    for qid in range(cfg.queues):
        lo, hi = rt.store.visible.queue_range(cfg.name, qid)
        queues.append({"queue_id": qid, "min_offset": lo, "max_offset": hi})
    return {"name": cfg.name, "queues": queues}


@router.post("", response_model=answers.TopicView)
async def create_topic(body: TopicCreate, request: Request) -> JsonResponse:
    rt = _runtime(request)
    rt.guard.require(request.scope, Action.ADMIN, Resource.topic(body.name))
    cfg, created = rt.topics.create(body.name, body.queues)
    return JsonResponse(topic_view(rt, cfg), status_code=201 if created else 200)


@router.get("", response_model=answers.TopicList)
async def list_topics(request: Request) -> JsonResponse:
    rt = _runtime(request)
    who = rt.guard.principal(request.scope)
    visible = [cfg for cfg in rt.store.topics.all() if rt.guard.allows(who, Action.DESCRIBE, Resource.topic(cfg.name))]
    return JsonResponse({"topics": [topic_view(rt, cfg) for cfg in visible]})


@router.get("/{topic}", response_model=answers.TopicView)
async def describe_topic(topic: str, request: Request) -> JsonResponse:
    rt = _runtime(request)
    rt.guard.require(request.scope, Action.DESCRIBE, Resource.topic(topic))
    return JsonResponse(topic_view(rt, rt.topics.get(topic)))


async def send_messages(request: HotRequest) -> Reply:
    topic = request.path_params["topic"]
    rt = request.runtime
    who = rt.guard.require(request.scope, Action.PUBLISH, Resource.topic(topic))
    body = await parse_body(request, SendRequest)
    started = time.perf_counter()
    if body.producer_id is not None or body.epoch is not None or body.sequence is not None:
        return await _send_idempotent(rt, who, topic, body, started)
    results, end = rt.sender.send(topic, body.messages)
    status = await _durable_status(rt, end)
    _observe_send(rt, len(results), status, started)
    return Reply({"results": _send_results(results, status)})


def _send_results(results: list[Any], status: str) -> list[dict[str, Any]]:
    return [{"status": status, "msg_id": r.properties["UNIQ_KEY"], "topic": r.topic, "queue_id": r.queue_id,
             "queue_offset": r.queue_offset, "commit_log_offset": r.commit_log_offset} for r in results]


async def _durable_status(rt: BrokerRuntime, end: int) -> str:
    """SEND_OK once ``end`` is durable; the flush timeout's status otherwise (a broker set's replicas:
    FLUSH_SLAVE_TIMEOUT / SLAVE_NOT_AVAILABLE)."""
    try:
        await rt.durable(end)
    except FlushTimedOut as exc:
        return getattr(exc, "send_status", SendStatus.FLUSH_DISK_TIMEOUT.value)
    return SendStatus.SEND_OK.value


def _observe_send(rt: BrokerRuntime, messages: int, status: str, started: float) -> None:
    rt.metrics.messages_in.inc(messages)
    rt.metrics.send_requests.labels(status).inc()
    rt.metrics.send_latency.observe(time.perf_counter() - started)


async def _send_idempotent(rt: BrokerRuntime, who: Principal, topic: str, body: SendRequest, started: float) -> Reply:
    """A numbered send: a repeat of one inside the producer's window gets the stored answer and stores nothing."""
    if body.producer_id is None or body.epoch is None or body.sequence is None:
        raise InvalidRequest("an idempotent send carries producer_id, epoch and sequence together")
    txn = rt.producer_ids.sender(body.producer_id, body.epoch, who.name)
    key = SendKey(SendKind.MESSAGES, "", topic)
    stored = rt.producer_ids.sent_before(txn, body.sequence, key)
    if stored is not None:
        if stored is Verdict.OLD_REPEAT:  # stored long ago, answer forgotten: success without offsets, as Kafka answers
            repeat = [{"status": SendStatus.SEND_OK.value, "msg_id": m.properties.get("UNIQ_KEY", ""), "topic": topic,
                       "queue_id": -1, "queue_offset": -1, "commit_log_offset": -1} for m in body.messages]
        else:
            repeat = sent_json(stored, SendStatus.SEND_OK.value)  # type: ignore[arg-type]  # a plain send's key: a list
        await rt.durable(rt.store.commit_log.end_offset)  # the first attempt may still be waiting for its fsync
        return Reply({"results": repeat, "duplicate": True})
    sequence = body.sequence
    results, end = rt.sender.send(topic, body.messages, then=lambda items: rt.producer_ids.send_record(txn, sequence, items))
    sent = sent_messages(results)
    rt.producer_ids.sent(txn, sequence, key, sent)  # before the fsync wait: a retry arriving meanwhile is a repeat
    status = await _durable_status(rt, end)
    _observe_send(rt, len(results), status, started)
    return Reply({"results": sent_json(sent, status)})


@router.get("/{topic}/queues/{queue_id}/messages", response_model=answers.MessagePage)
async def read_messages(
    topic: str,
    queue_id: int,
    request: Request,
    offset: int = Query(0, ge=0),
    max: int = Query(32, ge=1, le=1000),  # noqa: A002 - the API's query parameter is called max
) -> JsonResponse:
    rt = _runtime(request)
    rt.guard.require(request.scope, Action.SUBSCRIBE, Resource.topic(topic))
    cfg = rt.topics.get(topic)
    if not 0 <= queue_id < cfg.queues:
        raise InvalidQueueId(f"topic {topic!r} has queues 0..{cfg.queues - 1}, not {queue_id}")
    entries = rt.store.visible.read_entries(topic, queue_id, offset, max)
    lo, hi = rt.store.visible.queue_range(topic, queue_id)
    next_offset = entries[-1].queue_offset + 1 if entries else min(builtins.max(offset, lo), hi)
    answer = {"messages": [message_view(e) for e in entries if type(e) is not DamagedEntry], "next_offset": next_offset}
    damaged = [e.queue_offset for e in entries if type(e) is DamagedEntry]
    if damaged:  # reported by the store (log, metric); the reader learns what it did not get
        answer["damaged_offsets"] = damaged
    return JsonResponse(answer)



# Hot paths as raw ASGI routes (see hot_path.py); the app factory mounts them.
HOT_ROUTES = [
    HotRouteSpec("POST", "/v1/topics/{topic}/messages", send_messages, SendRequest, answers.SendAnswer,
                 "Send messages to a topic", "topics",
                 {"messages": [{"body": "order 42 paid", "keys": ["42"], "tag": "paid"}]}),
]
