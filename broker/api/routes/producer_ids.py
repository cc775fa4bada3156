"""Idempotent producer ids without a transactional id (Kafka's InitProducerId for idempotence, DESIGN section 11).

The SDK takes one lazily per producer instance and numbers every send under
it. Anyone allowed to publish may get one: the id only numbers sends, each of
which is still authorised on its own topic. The id is random and bound to the
principal that got it: another principal's numbered send with it is refused
(PRODUCER_ID_NOT_OWNED, in ``ProducerTransactions.sender``). Thin:
halfmq.broker.usecases.producer_txns.new_producer_id.
"""

from __future__ import annotations

from fastapi import APIRouter, Request

from halfmq.broker.protocol import NewProducerId
from halfmq.broker.usecases import producer_txns

from .. import answers
from ..body import StrictJsonRoute
from ..responses import JsonResponse
from ..runtime import runtime_of

router = APIRouter(prefix="/v1/producer-ids", route_class=StrictJsonRoute)


@router.post("", status_code=201, response_model=answers.ProducerIdAnswer)
async def new_producer_id(body: NewProducerId, request: Request) -> JsonResponse:
    return JsonResponse(await producer_txns.new_producer_id(runtime_of(request), request.scope), status_code=201)
