"""The transaction producer's halves and ends, coalesced into the broker's batch half and batch end routes.

Why: a transaction was two requests and two fsync waits; 64 concurrent
``send_in_transaction`` callers now share one batch half request per event-loop
pass, and (as one answer wakes them together) one batch end request.

``TransactionBatches.call`` stands in for the transport's ``call``: a half send
(``POST /v1/transactions``) or an end (``POST /v1/transactions/{id}/end``)
becomes one item of the pass's batch (the batching engine, keyed by batch route), anything else goes out
as it is. Each item is the single call's body (an end adds its
``transaction_id``), its answer goes through the single call's own ``parse``,
and its problem becomes the same typed error the single route's answer would
have raised, so retries, numbering and error mapping see exactly what they
saw before. Items are never retried here: the caller's retry policy retries
its own item, which joins a later batch.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import msgspec

from halfmq.errors import BrokerError
from halfmq.wire import MAX_BATCH, EndBatchRequest, HalfBatchRequest

from .batching import PassCoalescer, UpTo
from .endpoints import END_BATCH_PATH, HALF_BATCH_PATH, Call
from .transport import error_from_answer, parsed

__all__ = ["END_BATCH_PATH", "HALF_BATCH_PATH", "TransactionBatches", "batch_item", "batch_call"]

T = TypeVar("T")
Transported = Callable[[Call[Any]], Awaitable[Any]]


_BATCHES: dict[str, Any] = {HALF_BATCH_PATH: HalfBatchRequest, END_BATCH_PATH: EndBatchRequest}


def batch_item(call: Call[Any]) -> tuple[str, Any] | None:
    """The batch route that takes ``call`` and ``call`` as its item; None for a call no batch route takes."""
    if call.batch is None:
        return None
    path, item = call.batch
    return path, item(call.body)


def _item_outcome(raw: Any, where: str) -> Any:
    """An item's answer as it is, or its problem as the typed error (``BrokerError`` for a code this SDK does not know)."""
    if isinstance(raw, dict) and isinstance(raw.get("problem"), dict):
        problem = raw["problem"]
        status = problem.get("status")
        return error_from_answer(status if isinstance(status, int) else 400, msgspec.json.encode(problem), where)
    return raw


def batch_call(path: str, items: list[Any]) -> Call[list[Any]]:
    """One batch request; its answer as one outcome per item (raw answer or error), in order."""
    expected = len(items)

    def parse(data: Any) -> list[Any]:
        results = data.get("results") if isinstance(data, dict) else None
        if not isinstance(results, list) or len(results) != expected:
            # Outcomes are matched to items by position: a short answer would hand one caller another's outcome.
            raise BrokerError(f"broker answered {len(results) if isinstance(results, list) else 'no'} results "
                              f"for {expected} items of POST {path}")
        return [_item_outcome(raw, f"POST {path}") for raw in results]

    return Call("POST", path, parse=parse, body=_BATCHES[path](items=items))


class TransactionBatches:
    """Half sends and ends through the batch routes, coalesced per event-loop pass; other calls straight through."""

    def __init__(self, transport: Transported, max_batch: int = MAX_BATCH) -> None:
        self._transport = transport
        self._batches: PassCoalescer[str, Any, Any] = PassCoalescer(self._send, UpTo(max_batch))

    async def _send(self, path: str, items: list[Any]) -> list[Any]:
        outcomes: list[Any] = await self._transport(batch_call(path, items))
        return outcomes

    async def call(self, call: Call[T]) -> T:
        """What ``transport.call(call)`` returns or raises, the call coalesced with others where a batch route takes it."""
        routed = batch_item(call)
        if routed is None:
            result: T = await self._transport(call)
            return result
        path, item = routed
        return parsed(call, await self._batches.submit(path, item))

    async def aclose(self) -> None:
        """Wait for the batches in flight (their callers are waiting for them too)."""
        await self._batches.drain()
