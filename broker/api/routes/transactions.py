"""Transactional messages: half send, end, producer heartbeats, operator views and actions.

Parse, call the use case (halfmq.broker.usecases: half_sending, ending, producers, operator_actions), answer.
"""

from __future__ import annotations

from fastapi import APIRouter, Query, Request

from halfmq.broker.protocol import EndRequest, HalfSendRequest, Heartbeat
from halfmq.broker.usecases import ending, half_sending, operator_actions, producers
from halfmq.wire import TransactionState

from .. import answers
from ..body import StrictJsonRoute, parse_body
from ..hot_path import HotRequest, Reply
from ..responses import JsonResponse
from ..route_table import HotRouteSpec
from ..runtime import runtime_of

router = APIRouter(route_class=StrictJsonRoute)


async def send_half(request: HotRequest) -> Reply:
    rt = request.runtime
    who = rt.guard.principal(request.scope)
    body = await parse_body(request, HalfSendRequest)
    return Reply(await half_sending.send_half(rt, who, request.scope, body))


async def end_transaction(request: HotRequest) -> Reply:
    transaction_id = request.path_params["transaction_id"]
    rt = request.runtime
    who = rt.guard.principal(request.scope)
    body = await parse_body(request, EndRequest)
    return Reply(await ending.end_transaction(rt, who, request.scope, transaction_id, body))


@router.get("/v1/transactions", response_model=answers.TransactionList)
async def list_transactions(
    request: Request,
    state: TransactionState = Query(TransactionState.PENDING),
    limit: int = Query(100, ge=1, le=10_000),
) -> JsonResponse:
    rt = runtime_of(request)
    return JsonResponse(operator_actions.list_transactions(rt, rt.guard.principal(request.scope), request.scope, state, limit))


@router.get("/v1/transactions/{transaction_id}", response_model=answers.TransactionView)
async def get_transaction(transaction_id: str, request: Request) -> JsonResponse:
    rt = runtime_of(request)
    return JsonResponse(operator_actions.describe(rt, rt.guard.principal(request.scope), request.scope, transaction_id))


@router.post("/v1/transactions/{transaction_id}/force-commit", response_model=answers.TransactionView)
async def force_commit(transaction_id: str, request: Request) -> JsonResponse:
    rt = runtime_of(request)
    return JsonResponse(await operator_actions.force_end(rt, rt.guard.principal(request.scope), request.scope, transaction_id, "commit"))


@router.post("/v1/transactions/{transaction_id}/force-rollback", response_model=answers.TransactionView)
async def force_rollback(transaction_id: str, request: Request) -> JsonResponse:
    rt = runtime_of(request)
    return JsonResponse(await operator_actions.force_end(rt, rt.guard.principal(request.scope), request.scope, transaction_id, "rollback"))


@router.post("/v1/transactions/{transaction_id}/recheck", response_model=answers.TransactionView)
async def recheck(transaction_id: str, request: Request) -> JsonResponse:
    rt = runtime_of(request)
    return JsonResponse(operator_actions.recheck(rt, rt.guard.principal(request.scope), request.scope, transaction_id), status_code=202)


@router.post("/v1/transactions/{transaction_id}/resend", response_model=answers.TransactionView)
async def resend(transaction_id: str, request: Request) -> JsonResponse:
    rt = runtime_of(request)
    return JsonResponse(await operator_actions.resend(rt, rt.guard.principal(request.scope), request.scope, transaction_id))


@router.post("/v1/producers/heartbeat", response_model=answers.HeartbeatAnswer)
async def heartbeat(body: Heartbeat, request: Request) -> JsonResponse:
    rt = runtime_of(request)
    return JsonResponse(await producers.heartbeat(rt, rt.guard.principal(request.scope), request.scope, body))


@router.get("/v1/producers", response_model=answers.ProducerList)
async def list_producers(request: Request) -> JsonResponse:
    rt = runtime_of(request)
    return JsonResponse(producers.list_producers(rt, rt.guard.principal(request.scope), request.scope))


# Hot paths as raw ASGI routes (see hot_path.py); the app factory mounts them.
HOT_ROUTES = [
    HotRouteSpec("POST", "/v1/transactions", send_half, HalfSendRequest, answers.HalfSendAnswer,
                 "Send a half message (invisible until committed)", "transactions",
                 {"producer_group": "order_producer_group", "topic": "ORDER_PAID", "message": {"body": "order 42 paid"}}),
    HotRouteSpec("POST", "/v1/transactions/{transaction_id}/end", end_transaction, EndRequest, answers.TransactionView,
                 "Commit or roll back a half message", "transactions",
                 {"producer_group": "order_producer_group", "state": "commit"}),
]
