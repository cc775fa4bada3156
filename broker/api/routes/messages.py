"""Where is my message: a message's journey by id, and a search by key (halfmq.broker.usecases.journeys)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from halfmq import wire

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


ROUTES = [
    Route("GET", "/v1/messages", find_messages, "The messages sent with a key (their id, a key or an index key), newest first",
          "messages", answer=wire.MessageSearch, params=MessageSearchParams),
    Route("GET", "/v1/messages/{msg_id}", message_journey, "A message's journey: sent, checked, committed, released, "
          "dead-lettered, resent, acked", "messages", answer=wire.MessageJourney, params=MessageJourneyParams),
]
