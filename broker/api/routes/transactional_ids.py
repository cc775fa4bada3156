"""Producer transactions (Kafka semantics, DESIGN section 11): init, begin, messages, acks, commit, abort.

Parse, call the use case (halfmq.broker.usecases.producer_txns: who may act for a
transactional id, whose producer id it is), answer.
"""

from __future__ import annotations

from halfmq import wire
from halfmq.broker.security.access import TransactionalIdActor
from halfmq.broker.usecases.producer_txns import ProducerTransactions
from halfmq.wire import BeginTxnRequest, EndTxnRequest, InitProducer, TxnAcksRequest, TxnMessagesRequest

from ..body import parse_body
from ..front import ApiRequest, Reply
from ..router import Route


async def list_transactional_ids(request: ApiRequest) -> Reply:
    return Reply(request.usecases.producer_transactions.list_ids(request.principal))


async def describe_transactional_id(request: ApiRequest) -> Reply:
    return Reply(request.usecases.producer_transactions.describe(request.principal, request.scope, request.path_params["tid"]))


async def init(request: ApiRequest) -> Reply:
    body = await parse_body(request, InitProducer, empty_is_missing=True)
    tid = request.path_params["tid"]
    return Reply(await request.usecases.producer_transactions.init(request.principal, request.scope, tid, body.transaction_timeout_ms))


# The steps of a running transaction are hot paths (the front, front.py, serves them first): a copier makes five
# requests per transaction, so FastAPI's per-request cost showed in `halfmq bench eos`. Who may take a step is
# checked before its body is read.
def _stepping(request: ApiRequest) -> tuple[ProducerTransactions, TransactionalIdActor]:
    """The use case and the caller's grant on the path's transactional id (refused before the body is read)."""
    use = request.usecases.producer_transactions
    return use, use.stepping(request.principal, request.scope, request.path_params["tid"])


async def begin(request: ApiRequest) -> Reply:
    use, actor = _stepping(request)
    return Reply(use.begin(actor, await parse_body(request, BeginTxnRequest)))


async def messages(request: ApiRequest) -> Reply:
    use, actor = _stepping(request)
    return Reply(use.add_messages(actor, await parse_body(request, TxnMessagesRequest)))


async def acks(request: ApiRequest) -> Reply:
    use, actor = _stepping(request)
    return Reply(use.add_acks(actor, await parse_body(request, TxnAcksRequest)))


async def commit(request: ApiRequest) -> Reply:
    use, actor = _stepping(request)
    return Reply(await use.commit(actor, await parse_body(request, EndTxnRequest)))


async def abort(request: ApiRequest) -> Reply:
    use, actor = _stepping(request)
    return Reply(await use.abort(actor, await parse_body(request, EndTxnRequest)))


async def force_abort(request: ApiRequest) -> Reply:
    """An operator ends a stuck transaction now (its producer's next request learns TRANSACTION_ABORTED)."""
    tid = request.path_params["tid"]
    return Reply(await request.usecases.producer_transactions.force_abort(request.principal, request.scope, tid))


_FENCE = {"producer_id": 7, "epoch": 0}
_TID = "/v1/transactional-ids/{tid}"
_TAG = "transactional-ids"
HOT_ROUTES = [
    Route("POST", f"{_TID}/begin", begin, "Begin a producer transaction", _TAG,
          BeginTxnRequest, wire.TxnBeginResult, example={**_FENCE, "sequence": 0}),
    Route("POST", f"{_TID}/messages", messages, "Add messages to the open transaction", _TAG,
          TxnMessagesRequest, wire.TxnMessagesResult,
          example={**_FENCE, "sequence": 1, "messages": [{"topic": "ORDER_TOTALS", "body": "42"}]}),
    Route("POST", f"{_TID}/acks", acks, "Ack consumed messages inside the open transaction", _TAG,
          TxnAcksRequest, wire.TxnAcksResult,
          example={**_FENCE, "sequence": 2, "receipt_handles": ["<receipt_handle from receive>"]}),
    Route("POST", f"{_TID}/commit", commit, "Commit the open transaction (messages and acks at once)", _TAG,
          EndTxnRequest, wire.TxnEndResult, example=_FENCE),
    Route("POST", f"{_TID}/abort", abort, "Abort the open transaction", _TAG,
          EndTxnRequest, wire.TxnEndResult, example=_FENCE),
]
ROUTES = [
    Route("GET", "/v1/transactional-ids", list_transactional_ids, "Every transactional id the caller may see", _TAG,
          answer=wire.TransactionalIdList),
    Route("GET", _TID, describe_transactional_id, "A transactional id's producer, epoch and open transaction", _TAG,
          answer=wire.TransactionalIdView),
    Route("POST", f"{_TID}/init", init, "Init a producer for a transactional id (fences older epochs)", _TAG,
          InitProducer, wire.TxnInitResult, example={"transaction_timeout_ms": 60000}),
    Route("POST", f"{_TID}/force-abort", force_abort, "Abort a stuck transaction now (operators)", _TAG,
          answer=wire.TxnEndResult),
]
