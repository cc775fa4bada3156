"""Where is my message: a message's journey by id, a search by key (halfmq.broker.usecases.journeys), and the recall
of a timed message not yet due (halfmq.broker.usecases.sending)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from halfmq import wire

from ..body import parse_body
from ..front import ApiRequest, Reply
from ..router import Route

_TOPIC = Field(default=None, min_length=1, max_length=256,
               description="the message's topic; without it, every topic the principal may look up")


class MessageSearchParams(BaseModel):
    model_config = ConfigDict(extra="ignore")
    key: str = Field(min_length=1, max_length=256)
    since: int = Field(default=0, ge=0, description="epoch ms: only messages stored since")
    limit: int = Field(default=50, ge=1, le=256)
    topic: str | None = _TOPIC


class MessageJourneyParams(BaseModel):
    model_config = ConfigDict(extra="ignore")
    topic: str | None = _TOPIC


async def message_journey(request: ApiRequest) -> Reply:
    msg_id = request.path_params["msg_id"]
    p: MessageJourneyParams = request.params
    return Reply(await request.usecases.journeys.show(request.principal, request.scope, msg_id, p.topic))


async def find_messages(request: ApiRequest) -> Reply:
    p: MessageSearchParams = request.params
    return Reply(await request.usecases.journeys.find(request.principal, request.scope, p.key, p.since, p.limit, p.topic))


async def recall_message(request: ApiRequest) -> Reply:
    topic = request.path_params["topic"]
    publisher = request.runtime.access.publisher(request.principal, request.scope, topic)  # before the body is read
    body = await parse_body(request, wire.RecallRequest)
    return Reply(await request.usecases.sending.recall(publisher, body.recall_handle))


ROUTES = [
    Route("POST", "/v1/topics/{topic}/recall", recall_message, "Recall a timed message not yet due by the recall handle "
          "its send answered: it is never delivered (409 RECALL_TOO_LATE once due)", "topics",
          request=wire.RecallRequest, answer=wire.RecallResult,
          example={"recall_handle": "cjEfUEFZTUVOVF9EVUUfMB8xMjM0NR9DMEE4MDAwMTAwMDAwMDAwMDAwMDAwMDE"}),
    Route("GET", "/v1/messages", find_messages, "The messages sent with a key (their id, a key or an index key), newest first",
          "messages", answer=wire.MessageSearch, params=MessageSearchParams),
    Route("GET", "/v1/messages/{msg_id}", message_journey, "A message's journey: sent, checked, committed, released, "
          "dead-lettered, resent, acked", "messages", answer=wire.MessageJourney, params=MessageJourneyParams),
]
