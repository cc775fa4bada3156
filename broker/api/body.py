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
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import pydantic_core
from fastapi import Request, Response
from fastapi.routing import APIRoute
from pydantic import BaseModel, ValidationError

from .hot_path import HotRequest
from .problems import non_json_body, validation_problem

M = TypeVar("M", bound=BaseModel)


async def parse_body(request: HotRequest, model: type[M]) -> M:
    refused = non_json_body(request.content_type)
    if refused is not None:
        raise refused
    body = await request.body()
    try:
        return model.model_validate_json(body)
    except ValidationError as exc:
        raise validation_problem(exc.errors(include_url=False, include_input=False), where=("body",)) from None


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
