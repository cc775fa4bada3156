"""Idempotent producer ids without a transactional id (Kafka's InitProducerId for idempotence, DESIGN section 11).

The SDK takes one lazily per producer instance and numbers every send under
it. Anyone allowed to publish may get one: the id only numbers sends, each of
which is still authorised on its own topic. The id is random and bound to the
principal that got it: another principal's numbered send with it is refused
(PRODUCER_ID_NOT_OWNED, in ``ProducerTransactions.sender``). Thin:
halfmq.broker.usecases.producer_txns.new_producer_id.
"""

from __future__ import annotations

from halfmq import wire
from halfmq.wire import NewProducerId

from ..body import parse_body
from ..front import ApiRequest, Reply
from ..router import Route


async def new_producer_id(request: ApiRequest) -> Reply:
    await parse_body(request, NewProducerId, empty_is_missing=True)
    return Reply(await request.usecases.producer_transactions.new_producer_id(request.principal, request.scope), 201)


ROUTES = [
    Route("POST", "/v1/producer-ids", new_producer_id, "An idempotent producer id (no transactional id)", "producer-ids",
          NewProducerId, wire.ProducerIdResult, status=201),
]
