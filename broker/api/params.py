"""Path and query parameters of the routes that take them: checked by the front before the endpoint runs.

``front.checked_params`` validates them (a problem names ``path.x`` or ``query.y``, as FastAPI's did) and
openapi.py documents them from the same model. The bodies are halfmq.wire's request structs (body.py).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from halfmq.wire import TransactionState


class _Params(BaseModel):
    model_config = ConfigDict(extra="ignore")  # a query parameter the route does not know is ignored


class OffsetReadParams(_Params):
    queue_id: int
    offset: int = Field(default=0, ge=0)
    max: int = Field(default=32, ge=1, le=1000)


class GroupListParams(_Params):
    system: bool = False


class GroupDeleteParams(_Params):
    force: bool = False  # delete although deliveries are in flight


class TopicDeleteParams(_Params):
    force: bool = False  # delete although halves are pending or deliveries in flight


class DlqParams(_Params):
    offset: int = Field(default=0, ge=0)
    max: int = Field(default=100, ge=1, le=1000)


class DlqResendParams(_Params):
    offset: int


class TransactionListParams(_Params):
    state: TransactionState = TransactionState.PENDING
    limit: int = Field(default=100, ge=1, le=10_000)
