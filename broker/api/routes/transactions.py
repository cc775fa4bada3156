"""Transactional messages: half send, end, producer heartbeats, operator views and actions."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Query, Request
from starlette.types import Scope

from halfmq.broker.half_messages.check_url import OwnAddress, validate_check_url
from halfmq.broker.half_messages.half_records import Tx, not_found
from halfmq.broker.half_messages.state_machine import TxEvent
from halfmq.broker.idempotence.producer_ids import SendKey, SentHalf
from halfmq.broker.idempotence.producer_records import SendKind
from halfmq.broker.message_view import restored_view
from halfmq.broker.names import NameKind, checked_name
from halfmq.broker.producer_answers import final_json, half_json
from halfmq.broker.protocol import EndRequest, HalfSendRequest, Heartbeat
from halfmq.broker.security.policy import CLUSTER, Action, Principal, Resource
from halfmq.broker.store.flush_waiter import FlushTimedOut
from halfmq.broker.store.record import StoredMessage
from halfmq.errors import AccessDenied, InvalidRequest
from halfmq.wire import SendStatus, TransactionState

from .. import answers
from ..body import StrictJsonRoute, parse_body
from ..hot_path import HotRequest, Reply
from ..responses import JsonResponse
from ..route_table import HotRouteSpec
from ..runtime import BrokerRuntime

router = APIRouter(route_class=StrictJsonRoute)


def _runtime(request: Request) -> BrokerRuntime:
    return request.app.state.runtime


def _group(name: str) -> str:
    return checked_name(NameKind.PRODUCER_GROUP, name)


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
        "next_check_timestamp": int(tx.due_at * 1000) if tx.state is TransactionState.PENDING else None,
        "resolved_timestamp": tx.resolved_ms,
        "final": final_json(tx.final),
        "message": restored_view(half or rt.transactions.half_message(tx)),
    }
    if duplicate is not None:
        view["duplicate"] = duplicate
    return view


@dataclass(frozen=True, slots=True)
class StoredHalf:
    """A half message written (or a numbered repeat found); durable once the commit log's ``end`` is on disk."""

    answer: dict[str, Any]
    end: int
    duplicate: bool = False


def store_half(rt: BrokerRuntime, who: Principal, scope: Scope, body: HalfSendRequest) -> StoredHalf:
    """One half send's checks and write, without its fsync wait (the single and the batch route share it)."""
    group = _group(body.producer_group)
    for resource in (Resource.group(group), Resource.topic(body.topic)):
        rt.guard.authorize(who, Action.PUBLISH, resource, scope)
    numbered = body.producer_id is not None or body.epoch is not None or body.sequence is not None
    then = None
    if numbered:  # an idempotent half send: a repeat inside the producer's window gets its stored answer
        if body.producer_id is None or body.epoch is None or body.sequence is None:
            raise InvalidRequest("an idempotent send carries producer_id, epoch and sequence together")
        producer, sequence = rt.producer_ids.sender(body.producer_id, body.epoch, who.name), body.sequence
        key = SendKey(SendKind.HALF, group, body.topic)
        stored = rt.producer_ids.sent_before(producer, sequence, key)
        if stored is not None:  # the first attempt may still be waiting for its fsync
            repeat = half_json(stored, SendStatus.SEND_OK.value)  # type: ignore[arg-type]  # a half's key: a SentHalf
            return StoredHalf({**repeat, "duplicate": True}, rt.store.commit_log.end_offset, duplicate=True)
        then = lambda items: rt.producer_ids.send_record(producer, sequence, items, SendKind.HALF)  # noqa: E731
    cfg, exists = rt.topics.writable(body.topic)
    item = rt.sender.prepare(cfg, body.message)
    if not exists:
        rt.store.create_topic(cfg.name, cfg.queues)
    tx, end = rt.transactions.send_half(group, item, cfg.queues, then)
    sent = SentHalf(tx.transaction_id, tx.msg_id, tx.half_clog_offset, tx.half_offset)
    if numbered:
        rt.producer_ids.sent(producer, sequence, key, sent)
    return StoredHalf(half_json(sent, SendStatus.SEND_OK.value), end)


def with_flush_status(half: StoredHalf, timed_out: FlushTimedOut | None) -> dict[str, Any]:
    """The half's answer once its fsync wait ended; a timed-out wait keeps the half (status FLUSH_*), a repeat raises.

    A broker set's replicas answer FLUSH_SLAVE_TIMEOUT / SLAVE_NOT_AVAILABLE through the exception's ``send_status``.
    """
    if timed_out is None:
        return half.answer
    if half.duplicate:
        raise timed_out
    return {**half.answer, "status": getattr(timed_out, "send_status", SendStatus.FLUSH_DISK_TIMEOUT.value)}


async def flush_outcome(rt: BrokerRuntime, end: int) -> FlushTimedOut | None:
    """Wait until ``end`` is durable; the timeout as a value, for answers that report it per item."""
    try:
        await rt.durable(end)
    except FlushTimedOut as exc:
        return exc
    return None


async def send_half(request: HotRequest) -> Reply:
    rt = request.runtime
    who = rt.guard.principal(request.scope)
    body = await parse_body(request, HalfSendRequest)
    half = store_half(rt, who, request.scope, body)
    return Reply(with_flush_status(half, await flush_outcome(rt, half.end)))


async def end_transaction(request: HotRequest) -> Reply:
    transaction_id = request.path_params["transaction_id"]
    rt = request.runtime
    who = rt.guard.principal(request.scope)
    body = await parse_body(request, EndRequest)
    # Ownership: the body's group must be the transaction's (the domain checks) and the principal's to publish for.
    rt.guard.authorize(who, Action.PUBLISH, Resource.group(body.producer_group), request.scope)
    outcome = await rt.transactions.end(transaction_id, body.producer_group, body.state, from_check=body.from_check)
    return Reply(tx_view(rt, outcome.tx, duplicate=outcome.duplicate, half=outcome.half))


@router.get("/v1/transactions", response_model=answers.TransactionList)
async def list_transactions(
    request: Request,
    state: TransactionState = Query(TransactionState.PENDING),
    limit: int = Query(100, ge=1, le=10_000),
) -> JsonResponse:
    rt = _runtime(request)
    rt.guard.require(request.scope, Action.ADMIN, CLUSTER)
    txs = rt.transactions.pending() if state is TransactionState.PENDING else rt.transactions.in_state(state)
    return JsonResponse({"state": state.value, "count": len(txs), "transactions": [tx_view(rt, tx) for tx in txs[:limit]]})


@router.get("/v1/transactions/{transaction_id}", response_model=answers.TransactionView)
async def get_transaction(transaction_id: str, request: Request) -> JsonResponse:
    rt = _runtime(request)
    return JsonResponse(tx_view(rt, _owned(rt, request, transaction_id, Action.DESCRIBE)))


def _owned(rt: BrokerRuntime, request: Request, transaction_id: str, action: Action) -> Tx:
    """The transaction, if the caller may ``action`` its producer group.

    No oracle: asked who first (401 before 404), and a transaction of a group the caller may not even describe is
    answered as none at all (404), so a principal of another group cannot tell which ids exist.
    """
    who = rt.guard.principal(request.scope)
    tx = rt.transactions.get(transaction_id)
    try:
        rt.guard.authorize(who, Action.DESCRIBE, Resource.group(tx.producer_group), request.scope)  # counted, audited
    except AccessDenied:
        raise not_found(transaction_id) from None
    rt.guard.authorize(who, action, Resource.group(tx.producer_group), request.scope)
    return tx


@router.post("/v1/transactions/{transaction_id}/force-commit", response_model=answers.TransactionView)
async def force_commit(transaction_id: str, request: Request) -> JsonResponse:
    rt = _runtime(request)
    _owned(rt, request, transaction_id, Action.ADMIN)
    outcome = await rt.transactions.end(transaction_id, None, "commit")
    return JsonResponse(tx_view(rt, outcome.tx, duplicate=outcome.duplicate))


@router.post("/v1/transactions/{transaction_id}/force-rollback", response_model=answers.TransactionView)
async def force_rollback(transaction_id: str, request: Request) -> JsonResponse:
    rt = _runtime(request)
    _owned(rt, request, transaction_id, Action.ADMIN)
    outcome = await rt.transactions.end(transaction_id, None, "rollback")
    return JsonResponse(tx_view(rt, outcome.tx, duplicate=outcome.duplicate))


@router.post("/v1/transactions/{transaction_id}/recheck", response_model=answers.TransactionView)
async def recheck(transaction_id: str, request: Request) -> JsonResponse:
    rt = _runtime(request)
    tx = _owned(rt, request, transaction_id, Action.ADMIN)
    assert rt.checks is not None
    rt.checks.recheck_now(tx)
    return JsonResponse(tx_view(rt, tx), status_code=202)


@router.post("/v1/transactions/{transaction_id}/resend", response_model=answers.TransactionView)
async def resend(transaction_id: str, request: Request) -> JsonResponse:
    rt = _runtime(request)
    tx = _owned(rt, request, transaction_id, Action.ADMIN)
    outcome = rt.transactions.apply(tx, TxEvent.RESEND, note="operator")
    await rt.durable(outcome.tx.end_offset)
    return JsonResponse(tx_view(rt, outcome.tx, duplicate=outcome.duplicate))


@router.post("/v1/producers/heartbeat", response_model=answers.HeartbeatAnswer)
async def heartbeat(body: Heartbeat, request: Request) -> JsonResponse:
    rt = _runtime(request)
    group = _group(body.producer_group)
    rt.guard.require(request.scope, Action.PUBLISH, Resource.group(group))
    address = None
    if body.check_url:
        known = rt.producers.registered(group, body.client_id, body.check_url)
        if known is not None and known.address is not None:
            address = known.address  # resolved once, at registration: a later DNS answer changes nothing
        else:
            own = rt.own_address or OwnAddress.of(rt.settings.host, rt.settings.port)
            target = await asyncio.to_thread(validate_check_url, body.check_url, rt.settings.check_url_allow, own)
            address = target.address
    rt.producers.heartbeat(group, body.client_id, body.check_url or None, address)
    return JsonResponse({"producer_group": group, "client_id": body.client_id, "expires_in": rt.settings.producer_expiry})


@router.get("/v1/producers", response_model=answers.ProducerList)
async def list_producers(request: Request) -> JsonResponse:
    rt = _runtime(request)
    rt.guard.require(request.scope, Action.ADMIN, CLUSTER)
    return JsonResponse({"groups": [
        {"producer_group": g, "producers": [{"client_id": e.client_id, "check_url": e.check_url} for e in members]}
        for g, members in sorted(rt.producers.groups().items())
    ]})


# Hot paths as raw ASGI routes (see hot_path.py); the app factory mounts them.
HOT_ROUTES = [
    HotRouteSpec("POST", "/v1/transactions", send_half, HalfSendRequest, answers.HalfSendAnswer,
                 "Send a half message (invisible until committed)", "transactions",
                 {"producer_group": "order_producer_group", "topic": "ORDER_PAID", "message": {"body": "order 42 paid"}}),
    HotRouteSpec("POST", "/v1/transactions/{transaction_id}/end", end_transaction, EndRequest, answers.TransactionView,
                 "Commit or roll back a half message", "transactions",
                 {"producer_group": "order_producer_group", "state": "commit"}),
]
