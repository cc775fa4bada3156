"""Producer transactions (Kafka semantics, DESIGN section 11): init, begin, messages, acks, commit, abort.

Thin: the guard decides who may act for a transactional id (``publish`` on
``transactional-id:{tid}``, plus ``publish`` on every topic written and
``subscribe`` on every group and topic acked), then the domain service does
the rest. An operator abort needs ``admin`` on the transactional id. The
steps of a transaction also need the producer id to be the caller's: the
principal whose ``init`` obtained it (PRODUCER_ID_NOT_OWNED otherwise).
"""

from __future__ import annotations

from fastapi import APIRouter, Request

from halfmq.broker.producer_answers import acks_json, begin_json, end_json, init_json, messages_json, view_json
from halfmq.broker.producer_transactions.txn_records import AbortedBy
from halfmq.broker.protocol import BeginTxnRequest, EndTxnRequest, InitProducer, OutgoingMessage, TxnAcksRequest, TxnMessagesRequest
from halfmq.broker.security.policy import Action, Kind, Principal, Resource

from .. import answers
from ..body import StrictJsonRoute, parse_body
from ..hot_path import HotRequest, Reply
from ..responses import JsonResponse
from ..route_table import HotRouteSpec
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


@router.get("", response_model=answers.TransactionalIdList)
async def list_transactional_ids(request: Request) -> JsonResponse:
    rt = _runtime(request)
    who = rt.guard.principal(request.scope)
    txns = [t for t in rt.producer_txns.all() if rt.guard.allows(who, Action.DESCRIBE, _tid_resource(t.transactional_id))]
    return JsonResponse({"count": len(txns), "transactional_ids": [view_json(rt.producer_txns.view(t)) for t in txns]})


@router.get("/{tid}", response_model=answers.TransactionalIdView)
async def describe_transactional_id(tid: str, request: Request) -> JsonResponse:
    rt, _ = _acting(request, tid, Action.DESCRIBE)
    return JsonResponse(view_json(rt.producer_txns.view(rt.producer_txns.get(tid))))


@router.post("/{tid}/init", response_model=answers.InitAnswer)
async def init(tid: str, body: InitProducer, request: Request) -> JsonResponse:
    rt, who = _acting(request, tid)
    return JsonResponse(init_json(await rt.producer_txns.init(tid, body.transaction_timeout_ms, who.name)))


# The steps of a running transaction are hot paths (raw ASGI routes, see hot_path.py): a copier makes five
# requests per transaction, so FastAPI's per-request cost showed in `halfmq bench eos`.
def _hot_acting(request: HotRequest) -> tuple[BrokerRuntime, Principal, str]:
    rt: BrokerRuntime = request.runtime
    tid = request.path_params["tid"]
    who = rt.guard.principal(request.scope)
    rt.guard.authorize(who, Action.PUBLISH, _tid_resource(tid), request.scope)
    rt.producer_txns.check_acting(tid, who.name)  # its producer id is the principal's that initialised it
    return rt, who, tid


async def begin(request: HotRequest) -> Reply:
    rt, _, tid = _hot_acting(request)
    body = await parse_body(request, BeginTxnRequest)
    return Reply(begin_json(rt.producer_txns.begin(tid, body.producer_id, body.epoch, body.sequence)))


async def messages(request: HotRequest) -> Reply:
    rt, who, tid = _hot_acting(request)
    body = await parse_body(request, TxnMessagesRequest)
    by_topic: dict[str, list[OutgoingMessage]] = {}
    for msg in body.messages:  # every message is checked before anything is kept or a topic created
        by_topic.setdefault(msg.topic, []).append(msg)
    items, missing = [], []
    for topic, batch in by_topic.items():
        rt.guard.authorize(who, Action.PUBLISH, Resource.topic(topic), request.scope)
        cfg, exists = rt.topics.writable(topic)
        if not exists:
            missing.append(cfg)
        items.extend(rt.sender.prepare_many(cfg, batch))
    holder = who.name if rt.guard.enabled else None  # with auth off everyone is anonymous: only the broker-wide cap
    return Reply(messages_json(rt.producer_txns.add_messages(tid, body.producer_id, body.epoch, body.sequence, items, missing, principal=holder)))


async def acks(request: HotRequest) -> Reply:
    rt, who, tid = _hot_acting(request)
    body = await parse_body(request, TxnAcksRequest)
    receipts = rt.delivery.parse_receipts(body.receipt_handles)
    for h in receipts:  # one service cannot settle another's deliveries
        rt.guard.authorize(who, Action.SUBSCRIBE, Resource.group(h.group), request.scope)
        rt.guard.authorize(who, Action.SUBSCRIBE, Resource.topic(h.topic), request.scope)
    return Reply(acks_json(rt.producer_txns.add_acks(tid, body.producer_id, body.epoch, body.sequence, receipts)))


async def commit(request: HotRequest) -> Reply:
    rt, _, tid = _hot_acting(request)
    body = await parse_body(request, EndTxnRequest)
    return Reply(end_json(await rt.producer_txns.commit(tid, body.producer_id, body.epoch)))


async def abort(request: HotRequest) -> Reply:
    rt, _, tid = _hot_acting(request)
    body = await parse_body(request, EndTxnRequest)
    return Reply(end_json(await rt.producer_txns.abort(tid, body.producer_id, body.epoch)))


@router.post("/{tid}/force-abort", response_model=answers.ProducerTxnStep)
async def force_abort(tid: str, request: Request) -> JsonResponse:
    """An operator ends a stuck transaction now (its producer's next request learns TRANSACTION_ABORTED)."""
    rt, _ = _acting(request, tid, Action.ADMIN)
    return JsonResponse(end_json(await rt.producer_txns.abort(tid, None, None, by=AbortedBy.OPERATOR)))


_FENCE = {"producer_id": 7, "epoch": 0}
HOT_ROUTES = [
    HotRouteSpec("POST", "/v1/transactional-ids/{tid}/begin", begin, BeginTxnRequest, answers.ProducerTxnStep,
                 "Begin a producer transaction", "transactional-ids", {**_FENCE, "sequence": 0}),
    HotRouteSpec("POST", "/v1/transactional-ids/{tid}/messages", messages, TxnMessagesRequest, answers.ProducerTxnStep,
                 "Add messages to the open transaction", "transactional-ids",
                 {**_FENCE, "sequence": 1, "messages": [{"topic": "ORDER_TOTALS", "body": "42"}]}),
    HotRouteSpec("POST", "/v1/transactional-ids/{tid}/acks", acks, TxnAcksRequest, answers.ProducerTxnStep,
                 "Ack consumed messages inside the open transaction", "transactional-ids",
                 {**_FENCE, "sequence": 2, "receipt_handles": ["<receipt_handle from receive>"]}),
    HotRouteSpec("POST", "/v1/transactional-ids/{tid}/commit", commit, EndTxnRequest, answers.ProducerTxnStep,
                 "Commit the open transaction (messages and acks at once)", "transactional-ids", _FENCE),
    HotRouteSpec("POST", "/v1/transactional-ids/{tid}/abort", abort, EndTxnRequest, answers.ProducerTxnStep,
                 "Abort the open transaction", "transactional-ids", _FENCE),
]
