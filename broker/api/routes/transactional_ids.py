"""Producer transactions (Kafka semantics, DESIGN section 11): init, begin, messages, acks, commit, abort.

Parse, call the use case (halfmq.broker.usecases.producer_txns: who may act for a
transactional id, whose producer id it is), answer.
"""

from __future__ import annotations

from fastapi import APIRouter, Request

from halfmq.broker.protocol import BeginTxnRequest, EndTxnRequest, InitProducer, TxnAcksRequest, TxnMessagesRequest
from halfmq.broker.usecases import producer_txns as use

from .. import answers
from ..body import StrictJsonRoute, parse_body
from ..hot_path import HotRequest, Reply
from ..responses import JsonResponse
from ..route_table import HotRouteSpec
from ..runtime import runtime_of

router = APIRouter(prefix="/v1/transactional-ids", route_class=StrictJsonRoute)


@router.get("", response_model=answers.TransactionalIdList)
async def list_transactional_ids(request: Request) -> JsonResponse:
    rt = runtime_of(request)
    return JsonResponse(use.list_ids(rt, rt.guard.principal(request.scope)))


@router.get("/{tid}", response_model=answers.TransactionalIdView)
async def describe_transactional_id(tid: str, request: Request) -> JsonResponse:
    rt = runtime_of(request)
    return JsonResponse(use.describe(rt, rt.guard.principal(request.scope), request.scope, tid))


@router.post("/{tid}/init", response_model=answers.InitAnswer)
async def init(tid: str, body: InitProducer, request: Request) -> JsonResponse:
    rt = runtime_of(request)
    return JsonResponse(await use.init(rt, rt.guard.principal(request.scope), request.scope, tid, body.transaction_timeout_ms))


# The steps of a running transaction are hot paths (raw ASGI routes, see hot_path.py): a copier makes five
# requests per transaction, so FastAPI's per-request cost showed in `halfmq bench eos`. Who may take a step is
# checked before its body is read.
async def begin(request: HotRequest) -> Reply:
    rt, tid = request.runtime, request.path_params["tid"]
    use.stepping(rt, rt.guard.principal(request.scope), request.scope, tid)
    return Reply(use.begin(rt, tid, await parse_body(request, BeginTxnRequest)))


async def messages(request: HotRequest) -> Reply:
    rt, tid = request.runtime, request.path_params["tid"]
    who = use.stepping(rt, rt.guard.principal(request.scope), request.scope, tid)
    return Reply(use.add_messages(rt, who, request.scope, tid, await parse_body(request, TxnMessagesRequest)))


async def acks(request: HotRequest) -> Reply:
    rt, tid = request.runtime, request.path_params["tid"]
    who = use.stepping(rt, rt.guard.principal(request.scope), request.scope, tid)
    return Reply(use.add_acks(rt, who, request.scope, tid, await parse_body(request, TxnAcksRequest)))


async def commit(request: HotRequest) -> Reply:
    rt, tid = request.runtime, request.path_params["tid"]
    use.stepping(rt, rt.guard.principal(request.scope), request.scope, tid)
    return Reply(await use.commit(rt, tid, await parse_body(request, EndTxnRequest)))


async def abort(request: HotRequest) -> Reply:
    rt, tid = request.runtime, request.path_params["tid"]
    use.stepping(rt, rt.guard.principal(request.scope), request.scope, tid)
    return Reply(await use.abort(rt, tid, await parse_body(request, EndTxnRequest)))


@router.post("/{tid}/force-abort", response_model=answers.ProducerTxnStep)
async def force_abort(tid: str, request: Request) -> JsonResponse:
    """An operator ends a stuck transaction now (its producer's next request learns TRANSACTION_ABORTED)."""
    rt = runtime_of(request)
    return JsonResponse(await use.force_abort(rt, rt.guard.principal(request.scope), request.scope, tid))


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
