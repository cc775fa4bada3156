"""Request-body decoding: pydantic validates the JSON, and its errors map to the same problems on every route.

Two spellings remain, each pinned by tests/unit/broker/api/test_router_pins.py:
``parse_body`` (the routes that were always raw ASGI: send, half, end, receive,
ack, nack, the producer-transaction steps, the batches) validates the raw bytes
in one call; ``parse_json_body`` (the routes FastAPI served until issue 31)
answers as FastAPI did: an empty body is a missing body, bytes that are not JSON
are "JSON decode error". Both parse with pydantic's parser, not Python's
``json``, which takes lone surrogates that UTF-8 can neither store nor echo.
Making them one is docs/history/router-plan.md's step 4.
"""

from __future__ import annotations

from typing import TypeVar

import pydantic_core
from pydantic import BaseModel, ValidationError

from halfmq.errors import MalformedJson

from .front import ApiRequest
from .problems import non_json_body, validation_problem

M = TypeVar("M", bound=BaseModel)


async def parse_body(request: ApiRequest, model: type[M]) -> M:
    refused = non_json_body(request.content_type)
    if refused is not None:
        raise refused
    body = await request.body()
    try:
        return model.model_validate_json(body)
    except ValidationError as exc:
        raise validation_problem(exc.errors(include_url=False, include_input=False), where=("body",)) from None


async def parse_json_body(request: ApiRequest, model: type[M]) -> M:
    refused = non_json_body(request.content_type)
    if refused is not None:
        raise refused
    body = await request.body()
    if not body:
        raise validation_problem([{"loc": (), "msg": "Field required", "type": "missing"}], where=("body",))
    try:
        data = pydantic_core.from_json(body)
    except ValueError:
        raise MalformedJson("the request body is not valid JSON: JSON decode error") from None
    try:
        return model.model_validate(data, from_attributes=True)
    except ValidationError as exc:
        raise validation_problem(exc.errors(include_url=False, include_input=False), where=("body",)) from None
