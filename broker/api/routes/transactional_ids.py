"""Producer transactions (Kafka semantics, DESIGN section 11): init, begin, messages, acks, commit, abort.

Thin: the guard decides who may act for a transactional id (``publish`` on
``transactional-id:{tid}``, plus ``publish`` on every topic written and
``subscribe`` on every group and topic acked), then the domain service does
the rest. An operator abort needs ``admin`` on the transactional id.
"""

from __future__ import annotations

from fastapi import APIRouter, Request

from halfmq.broker.protocol import EndTxnRequest, InitProducer, SequencedRequest, TxnAcksRequest, TxnMessagesRequest
from halfmq.broker.security.policy import Action, Kind, Principal, Resource
from halfmq.broker.store.topics import TopicConfig
from halfmq.broker.transaction.producer_records import AbortedBy

from ..body import StrictJsonRoute
from ..responses import JsonResponse
from ..runtime import BrokerRuntime

router = APIRouter(prefix="/v1/transactional-ids", route_class=StrictJsonRoute)


def _runtime(request: Request) -> BrokerRuntime:
    return request.app.state.runtime


def _tid_resource(tid: str) -> Resource:
    return Resource(Kind.TRANSACTIONAL_ID, tid)


def _acting(request: Request, tid: str, action: Action = Action.PUBLISH) -> tuple[BrokerRuntime, Principal]:
    rt = _runtime(request)
    who = rt.guard.principal(request.scope)
    rt.guard.authorize(who, action, _tid_resource(tid), request.scope)
    return rt, who


@router.get("")
async def list_transactional_ids(request: Request) -> JsonResponse:
    rt = _runtime(request)
    who = rt.guard.principal(request.scope)
    txns = [t for t in rt.producer_txns.all() if rt.guard.allows(who, Action.DESCRIBE, _tid_resource(t.transactional_id))]
    return JsonResponse({"count": len(txns), "transactional_ids": [rt.producer_txns.view(t) for t in txns]})


@router.get("/{tid}")
async def describe_transactional_id(tid: str, request: Request) -> JsonResponse:
    rt, _ = _acting(request, tid, Action.DESCRIBE)
    return JsonResponse(rt.producer_txns.view(rt.producer_txns.get(tid)))


@router.post("/{tid}/init")
async def init(tid: str, body: InitProducer, request: Request) -> JsonResponse:
    rt, _ = _acting(request, tid)
    return JsonResponse(await rt.producer_txns.init(tid, body.transaction_timeout_ms))


@router.post("/{tid}/begin")
async def begin(tid: str, body: SequencedRequest, request: Request) -> JsonResponse:
    rt, _ = _acting(request, tid)
    return JsonResponse(await rt.producer_txns.begin(tid, body.producer_id, body.epoch, body.sequence))


@router.post("/{tid}/messages")
async def messages(tid: str, body: TxnMessagesRequest, request: Request) -> JsonResponse:
    rt, who = _acting(request, tid)
    items, missing = [], {}
    for msg in body.messages:  # every message is checked before anything is kept or a topic created
        rt.guard.authorize(who, Action.PUBLISH, Resource.topic(msg.topic), request.scope)
        cfg, exists = rt.topics.writable(msg.topic)
        if not exists:
            cfg = missing.setdefault(cfg.name, cfg)
        items.append(rt.sender.prepare(cfg, msg))
    missing_topics: list[TopicConfig] = list(missing.values())
    return JsonResponse(rt.producer_txns.add_messages(tid, body.producer_id, body.epoch, body.sequence, items, missing_topics))


@router.post("/{tid}/acks")
async def acks(tid: str, body: TxnAcksRequest, request: Request) -> JsonResponse:
    rt, who = _acting(request, tid)
    receipts = rt.delivery.parse_receipts(body.receipt_handles)
    for h in receipts:  # one service cannot settle another's deliveries
        rt.guard.authorize(who, Action.SUBSCRIBE, Resource.group(h.group), request.scope)
        rt.guard.authorize(who, Action.SUBSCRIBE, Resource.topic(h.topic), request.scope)
    return JsonResponse(rt.producer_txns.add_acks(tid, body.producer_id, body.epoch, body.sequence, receipts))


@router.post("/{tid}/commit")
async def commit(tid: str, body: EndTxnRequest, request: Request) -> JsonResponse:
    rt, _ = _acting(request, tid)
    return JsonResponse(await rt.producer_txns.commit(tid, body.producer_id, body.epoch))


@router.post("/{tid}/abort")
async def abort(tid: str, body: EndTxnRequest, request: Request) -> JsonResponse:
    rt, _ = _acting(request, tid)
    return JsonResponse(await rt.producer_txns.abort(tid, body.producer_id, body.epoch))


@router.post("/{tid}/force-abort")
async def force_abort(tid: str, request: Request) -> JsonResponse:
    """An operator ends a stuck transaction now (its producer's next request learns TRANSACTION_ABORTED)."""
    rt, _ = _acting(request, tid, Action.ADMIN)
    return JsonResponse(await rt.producer_txns.abort(tid, None, None, by=AbortedBy.OPERATOR))
