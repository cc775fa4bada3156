"""Transactional messages: half send, end, producer heartbeats, operator views and actions.

Parse, call the use case (halfmq.broker.usecases: half_sending, ending, producers, operator_actions), answer.
"""

from __future__ import annotations

from halfmq import wire
from halfmq.wire import EndRequest, HalfSendRequest, Heartbeat

from ..body import parse_body
from ..front import ApiRequest, Reply
from ..params import TransactionListParams
from ..router import Route


async def send_half(request: ApiRequest) -> Reply:
    body = await parse_body(request, HalfSendRequest)
    return Reply(await request.usecases.half_sending.send_half(request.principal, request.scope, body))


async def end_transaction(request: ApiRequest) -> Reply:
    transaction_id = request.path_params["transaction_id"]
    body = await parse_body(request, EndRequest)
    return Reply(await request.usecases.ending.end_transaction(request.principal, request.scope, transaction_id, body))


async def list_transactions(request: ApiRequest) -> Reply:
    p: TransactionListParams = request.params
    return Reply(request.usecases.operator_actions.list_transactions(request.principal, request.scope, p.state, p.limit))


async def get_transaction(request: ApiRequest) -> Reply:
    tid = request.path_params["transaction_id"]
    return Reply(request.usecases.operator_actions.describe(request.principal, request.scope, tid))


async def force_commit(request: ApiRequest) -> Reply:
    tid = request.path_params["transaction_id"]
    return Reply(await request.usecases.operator_actions.force_end(request.principal, request.scope, tid, "commit"))


async def force_rollback(request: ApiRequest) -> Reply:
    tid = request.path_params["transaction_id"]
    return Reply(await request.usecases.operator_actions.force_end(request.principal, request.scope, tid, "rollback"))


async def recheck(request: ApiRequest) -> Reply:
    tid = request.path_params["transaction_id"]
    return Reply(request.usecases.operator_actions.recheck(request.principal, request.scope, tid), 202)


async def resend(request: ApiRequest) -> Reply:
    tid = request.path_params["transaction_id"]
    return Reply(await request.usecases.operator_actions.resend(request.principal, request.scope, tid))


async def heartbeat(request: ApiRequest) -> Reply:
    body = await parse_body(request, Heartbeat, empty_is_missing=True)
    return Reply(await request.usecases.heartbeats.heartbeat(request.principal, request.scope, body))


async def list_producers(request: ApiRequest) -> Reply:
    return Reply(request.usecases.heartbeats.list_producers(request.principal, request.scope))


_TX = "/v1/transactions/{transaction_id}"
HOT_ROUTES = [
    Route("POST", "/v1/transactions", send_half, "Send a half message (invisible until committed)", "transactions",
          HalfSendRequest, wire.HalfSendResult,
          example={"producer_group": "order_producer_group", "topic": "ORDER_PAID", "message": {"body": "order 42 paid"}}),
    Route("POST", f"{_TX}/end", end_transaction, "Commit or roll back a half message", "transactions",
          EndRequest, wire.TransactionView, example={"producer_group": "order_producer_group", "state": "commit"}),
]
ROUTES = [
    Route("GET", "/v1/transactions", list_transactions, "List transactions in a state (operators)", "transactions",
          answer=wire.TransactionList, params=TransactionListParams),
    Route("GET", _TX, get_transaction, "Describe a transaction", "transactions", answer=wire.TransactionView),
    Route("POST", f"{_TX}/force-commit", force_commit, "Commit a pending transaction now (operators)", "transactions",
          answer=wire.TransactionView),
    Route("POST", f"{_TX}/force-rollback", force_rollback, "Roll back a pending transaction now (operators)",
          "transactions", answer=wire.TransactionView),
    Route("POST", f"{_TX}/recheck", recheck, "Ask the producer about a pending transaction now (operators)",
          "transactions", answer=wire.TransactionView, status=202),
    Route("POST", f"{_TX}/resend", resend, "Deliver a committed transaction's message again (operators)",
          "transactions", answer=wire.TransactionView),
    Route("POST", "/v1/producers/heartbeat", heartbeat, "A producer says it is alive (and where to check back)",
          "producers", Heartbeat, wire.HeartbeatResult,
          example={"producer_group": "order_producer_group", "client_id": "orders-1", "check_url": "http://orders:8000/check"}),
    Route("GET", "/v1/producers", list_producers, "Live producers per producer group", "producers",
          answer=wire.ProducerList),
]
