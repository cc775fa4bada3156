"""Request-body parsing: one JSON parser for every route, hot or not.

The hot endpoints (send, half, end, receive, ack, nack) are raw ASGI routes (hot_path.py):
pydantic validates the raw bytes in one call, and errors map to the same problems
FastAPI's validation would produce. FastAPI's own routes parse with the same parser
(``StrictJsonRoute``) instead of Python's ``json``, which takes lone surrogates (as
``\\udc00`` escapes, or as raw bytes through ``surrogatepass``) that UTF-8 can neither
store nor echo: a heartbeat carrying one once answered 500 and poisoned the registry.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Coroutine, TypeVar

import pydantic_core
from fastapi import Request, Response
from fastapi.routing import APIRoute
from pydantic import BaseModel, ValidationError

from halfmq.broker.errors import InvalidRequest, MalformedJson, UnsupportedMediaType

from .hot_path import HotRequest

M = TypeVar("M", bound=BaseModel)


async def parse_body(request: HotRequest, model: type[M]) -> M:
    content_type = request.content_type
    if "json" not in content_type:
        raise UnsupportedMediaType(f"send the body as application/json, not {content_type or 'no content type'}")
    body = await request.body()
    try:
        return model.model_validate_json(body)
    except ValidationError as exc:
        raise validation_problem(exc) from None


def validation_problem(exc: ValidationError) -> InvalidRequest:
    errors = exc.errors(include_url=False, include_input=False)
    bad_json = [e for e in errors if e.get("type") in ("json_invalid", "json_type")]
    if bad_json:
        return MalformedJson(f"the request body is not valid JSON: {bad_json[0].get('msg', '')}")
    details = [{"loc": ["body", *(str(p) for p in e.get("loc", ()))], "msg": e.get("msg", ""), "type": e.get("type", "")} for e in errors]
    summary = "; ".join(f"{'.'.join(d['loc'])}: {d['msg']}" for d in details[:5])
    return InvalidRequest(summary, errors=details)


class StrictJsonRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            body = await self.body()
            try:
                self._json = pydantic_core.from_json(body)
            except ValueError as exc:  # FastAPI turns JSONDecodeError into its "json_invalid" error: MALFORMED_JSON
                raise json.JSONDecodeError(str(exc), body.decode("utf-8", "replace"), 0) from None
        return self._json


class StrictJsonRoute(APIRoute):
    """A FastAPI route whose JSON body goes through the hot path's parser (see the module docstring)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def strict(request: Request) -> Response:
            return await handler(StrictJsonRequest(request.scope, request.receive))

        return strict
