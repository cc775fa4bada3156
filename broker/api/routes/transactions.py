"""Transactional messages: half send, end, producer heartbeats, operator views and actions."""

from __future__ import annotations

from fastapi import APIRouter, Query, Request

from broker.errors import FlushDiskTimeout, InvalidGroupName
from broker.message_view import restored_view
from broker.protocol import EndRequest, HalfSendRequest, Heartbeat
from broker.store.record import StoredMessage
from broker.store.topics import is_valid_user_name
from broker.transaction.check_url import validate_check_url
from broker.transaction.state_machine import TxEvent, TxState
from broker.transaction.transaction_service import Tx

from ..body import StrictJsonRoute, parse_body
from ..hot_path import HotRequest, Reply
from ..responses import JsonResponse
from ..runtime import BrokerRuntime

router = APIRouter(route_class=StrictJsonRoute)


def _runtime(request: Request) -> BrokerRuntime:
    return request.app.state.runtime


def _group(name: str) -> str:
    if not is_valid_user_name(name):
        raise InvalidGroupName(f"invalid producer group {name!r}: use 1-127 of A-Z a-z 0-9 _ -")
    return name


def tx_view(rt: BrokerRuntime, tx: Tx, *, duplicate: bool | None = None, half: StoredMessage | None = None) -> dict:
    now_ms = rt.transactions.now() * 1000
    view = {
        "transaction_id": tx.transaction_id,
        "producer_group": tx.producer_group,
        "state": tx.state.value,
        "check_times": tx.check_times,
        "born_timestamp": tx.born_ms,
        "age_seconds": round((now_ms - tx.born_ms) / 1000, 3),
        "last_answer": tx.last_answer,
        "last_check_timestamp": tx.last_check_ms,
        "next_check_timestamp": int(tx.due_at * 1000) if tx.state is TxState.PENDING else None,
        "resolved_timestamp": tx.resolved_ms,
        "final": tx.final,
        "message": restored_view(half or rt.transactions.half_message(tx)),
    }
    if duplicate is not None:
        view["duplicate"] = duplicate
    return view


async def send_half(request: HotRequest) -> Reply:
    body = await parse_body(request, HalfSendRequest)
    rt = request.runtime
    group = _group(body.producer_group)
    cfg, exists = rt.topics.writable(body.topic)
    item = rt.sender.prepare(cfg, body.message)
    if not exists:
        rt.store.create_topic(cfg.name, cfg.queues)
    tx, end = rt.transactions.send_half(group, item, cfg.queues)
    status = "SEND_OK"
    try:
        await rt.durable(end)
    except FlushDiskTimeout:
        status = "FLUSH_DISK_TIMEOUT"
    return Reply({
        "status": status,
        "transaction_id": tx.transaction_id,
        "msg_id": tx.msg_id,
        "commit_log_offset": tx.half_clog_offset,
        "queue_offset": tx.half_offset,
    })


async def end_transaction(request: HotRequest) -> Reply:
    transaction_id = request.path_params["transaction_id"]
    body = await parse_body(request, EndRequest)
    rt = request.runtime
    outcome = await rt.transactions.end(transaction_id, body.producer_group, body.state, from_check=body.from_check)
    return Reply(tx_view(rt, outcome.tx, duplicate=outcome.duplicate, half=outcome.half))


@router.get("/v1/transactions")
async def list_transactions(
    request: Request,
    state: TxState = Query(TxState.PENDING),
    limit: int = Query(100, ge=1, le=10_000),
) -> JsonResponse:
    rt = _runtime(request)
    txs = rt.transactions.pending() if state is TxState.PENDING else rt.transactions.in_state(state)
    return JsonResponse({"state": state.value, "count": len(txs), "transactions": [tx_view(rt, tx) for tx in txs[:limit]]})


@router.get("/v1/transactions/{transaction_id}")
async def get_transaction(transaction_id: str, request: Request) -> JsonResponse:
    rt = _runtime(request)
    return JsonResponse(tx_view(rt, rt.transactions.get(transaction_id)))


@router.post("/v1/transactions/{transaction_id}/force-commit")
async def force_commit(transaction_id: str, request: Request) -> JsonResponse:
    rt = _runtime(request)
    outcome = await rt.transactions.end(transaction_id, None, "commit")
    return JsonResponse(tx_view(rt, outcome.tx, duplicate=outcome.duplicate))


@router.post("/v1/transactions/{transaction_id}/force-rollback")
async def force_rollback(transaction_id: str, request: Request) -> JsonResponse:
    rt = _runtime(request)
    outcome = await rt.transactions.end(transaction_id, None, "rollback")
    return JsonResponse(tx_view(rt, outcome.tx, duplicate=outcome.duplicate))


@router.post("/v1/transactions/{transaction_id}/recheck")
async def recheck(transaction_id: str, request: Request) -> JsonResponse:
    rt = _runtime(request)
    tx = rt.transactions.get(transaction_id)
    assert rt.checks is not None
    rt.checks.recheck_now(tx)
    return JsonResponse(tx_view(rt, tx), status_code=202)


@router.post("/v1/transactions/{transaction_id}/resend")
async def resend(transaction_id: str, request: Request) -> JsonResponse:
    rt = _runtime(request)
    tx = rt.transactions.get(transaction_id)
    outcome = rt.transactions.apply(tx, TxEvent.RESEND, note="operator")
    await rt.durable(outcome.tx.end_offset)
    return JsonResponse(tx_view(rt, outcome.tx, duplicate=outcome.duplicate))


@router.post("/v1/producers/heartbeat")
async def heartbeat(body: Heartbeat, request: Request) -> JsonResponse:
    rt = _runtime(request)
    group = _group(body.producer_group)
    check_url = validate_check_url(body.check_url, rt.settings.check_url_allow) if body.check_url else None
    rt.producers.heartbeat(group, body.client_id, check_url)
    return JsonResponse({"producer_group": group, "client_id": body.client_id, "expires_in": rt.settings.producer_expiry})


@router.get("/v1/producers")
async def list_producers(request: Request) -> JsonResponse:
    rt = _runtime(request)
    return JsonResponse({"groups": [
        {"producer_group": g, "producers": [{"client_id": e.client_id, "check_url": e.check_url} for e in members]}
        for g, members in sorted(rt.producers.groups().items())
    ]})


# Hot paths as raw ASGI routes (see hot_path.py); the app factory mounts them.
RAW_ROUTES = [
    ("/v1/transactions", send_half, ["POST"]),
    ("/v1/transactions/{transaction_id}/end", end_transaction, ["POST"]),
]
