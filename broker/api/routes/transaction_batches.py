"""Batch half and batch end: many transactions' half sends (or ends) in one request, one fsync wait for all.

Why: a transaction through the SDK was two HTTP requests and two fsync waits,
and 64 concurrent ``send_in_transaction`` callers spent most of their time in
per-request work. The SDK coalesces the halves (and the ends) its callers
issue in one event-loop pass into one request here.

Each item is the single route's body (an end adds its ``transaction_id``) and
gets the single route's checks: its producer group and topic are authorized
per item, only the producer group that sent a half may end it, a numbered
half is answered from the producer's window when repeated. Each item gets its
own answer or its own problem (``{"problem": {... "code": ...}}``) in request
order, so one bad item never fails or hides the others. The request as a
whole is refused with a 4xx only for what concerns all items: no valid token,
a body that is not a JSON object with 1..MAX_BATCH ``items``. Once the items
are being written the request never fails as a whole, not even for a bug (its
item answers a 500 problem, logged with its traceback): the items written
before it are answered, so no caller is left with a half whose id it never
learned.

Items are written one after the other (each half stays its own atomic write
group with its idempotence record, as the single route writes it); the
request then waits once, for the last item's end offset, so the store's group
commit covers them all with one fsync.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypeVar

import msgspec

from halfmq import wire
from halfmq.broker.usecases.durability import FlushTimedOut
from halfmq.broker.usecases.ending import EndOutcome
from halfmq.broker.usecases.half_sending import StoredHalf, with_flush_status
from halfmq.errors import BrokerError
from halfmq.wire import MAX_BATCH, EndBatchRequest, EndItem, HalfBatchRequest, HalfSendRequest

from ..body import converted, parse_body
from ..front import ApiRequest, Reply
from ..problems import as_broker_error
from ..router import Route

log = logging.getLogger(__name__)

HALF_BATCH_PATH = "/v1/transaction-batches/half"
END_BATCH_PATH = "/v1/transaction-batches/end"

M = TypeVar("M", bound=msgspec.Struct)
R = TypeVar("R")


class RawBatch(msgspec.Struct, forbid_unknown_fields=True):
    """A batch's envelope only: each item is decoded on its own, so one malformed item fails only itself."""

    items: Annotated[list[Any], msgspec.Meta(min_length=1, max_length=MAX_BATCH)]


def _problem(error: BrokerError, path: str) -> dict[str, Any]:
    return {"problem": error.to_problem(path)}


def _each(items: list[Any], shape: type[M], path: str, run: Callable[[M], R]) -> list[R | dict[str, Any]]:
    """``run`` per item decoded as ``shape``: its result, or its problem (a bug's is a 500, in the log too)."""
    done: list[R | dict[str, Any]] = []
    for index, raw in enumerate(items):
        try:
            item = converted(raw, shape, ("body", "items", str(index)))
            done.append(run(item))
        except Exception as exc:
            error = as_broker_error(exc)
            if error is None:
                log.exception("unhandled error on item %d of %s", index, path)
                error = BrokerError("internal error; see the broker log")
            done.append(_problem(error, path))
    return done


async def _written_then_flushed(request: ApiRequest, shape: type[M], path: str, run: Callable[[M], R], written: type[R],
                                end_of: Callable[[R], int], flushed: Callable[[int], Awaitable[FlushTimedOut | None]],
                                ) -> tuple[list[R | dict[str, Any]], FlushTimedOut | None]:
    """Each item through ``run`` (``_each``), then one wait for the end offset of the last one ``written``: one fsync
    covers them all. Answers what each item gave, and the wait's timeout (None: all written items are durable)."""
    batch = await parse_body(request, RawBatch)
    done = _each(batch.items, shape, path, run)
    ends = [end_of(d) for d in done if isinstance(d, written)]
    return done, await flushed(max(ends)) if ends else None


async def send_half_batch(request: ApiRequest) -> Reply:
    use = request.usecases.half_sending
    halves, timed_out = await _written_then_flushed(
        request, HalfSendRequest, HALF_BATCH_PATH, lambda body: use.store_half(request.principal, request.scope, body),
        StoredHalf, lambda half: half.end, use.flushed)
    results: list[wire.HalfSendResult | dict[str, Any]] = []
    for half in halves:
        if not isinstance(half, StoredHalf):
            results.append(half)
            continue
        try:
            results.append(with_flush_status(half, timed_out))
        except FlushTimedOut as exc:  # a repeat whose first attempt's fsync timed out: its problem, as the single route
            results.append(_problem(as_broker_error(exc) or BrokerError(), HALF_BATCH_PATH))
    return Reply(wire.HalfBatchResponse(results=results))  # type: ignore[arg-type]  # documented as one_of(HalfSendResult, ItemProblem)


async def end_transaction_batch(request: ApiRequest) -> Reply:
    use = request.usecases.ending
    ended, timed_out = await _written_then_flushed(
        request, EndItem, END_BATCH_PATH, lambda item: use.end_item(request.principal, request.scope, item),
        EndOutcome, lambda outcome: outcome.tx.end_offset, use.flushed)
    failed = None if timed_out is None else _problem(as_broker_error(timed_out) or BrokerError(), END_BATCH_PATH)
    views = request.usecases.views
    results = [e if not isinstance(e, EndOutcome) else failed or views.tx_view(e.tx, duplicate=e.duplicate, half=e.half)
               for e in ended]
    return Reply(wire.EndBatchResponse(results=results))  # type: ignore[arg-type]  # documented as one_of(TransactionView, ItemProblem)


HOT_ROUTES = [
    Route("POST", HALF_BATCH_PATH, send_half_batch, "Send up to MAX_BATCH half messages, each answered on its own",
          "transactions", HalfBatchRequest, wire.HalfBatchResponse,
          example={"items": [{"producer_group": "order_producer_group", "topic": "ORDER_PAID",
                             "message": {"body": "order 42 paid"}}]}),
    Route("POST", END_BATCH_PATH, end_transaction_batch, "End up to MAX_BATCH transactions, each answered on its own",
          "transactions", EndBatchRequest, wire.EndBatchResponse,
          example={"items": [{"transaction_id": "C0A8000100002A9F0000000000000000", "producer_group": "order_producer_group",
                             "state": "commit"}]}),
]
