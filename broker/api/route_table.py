"""The hot routes' table: one entry per route, read by the raw ASGI front *and* by the OpenAPI document.

The hot endpoints (hot_path.py) skip FastAPI, so FastAPI never sees them and
``/openapi.json`` used to lack send, half, end, receive, ack and nack. Each
entry here names its path, method, endpoint, request model, answer model and
an example; ``raw`` hands the front its (path, endpoint, methods) triples and
``document`` registers a documentation-only FastAPI route per entry. The front
matches hot paths before FastAPI is asked, so those routes are never served:
the table costs the hot path nothing per request.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, NoReturn

from fastapi import Body, FastAPI
from fastapi import Path as PathParam
from pydantic import BaseModel

from .hot_path import Endpoint
from .problems import PROBLEM


@dataclass(frozen=True)
class HotRouteSpec:
    method: str
    path: str
    endpoint: Endpoint
    request: type[BaseModel]
    response: type[BaseModel]
    summary: str
    tag: str
    example: dict[str, Any] = field(default_factory=dict)

    @property
    def path_params(self) -> list[str]:
        return [s[1:-1] for s in self.path.split("/") if s.startswith("{")]


def raw(specs: list[HotRouteSpec]) -> list[tuple[str, Endpoint, list[str]]]:
    """What the raw front serves, straight from the table."""
    return [(s.path, s.endpoint, [s.method]) for s in specs]


_ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"description": text, "content": {PROBLEM: {"schema": {"type": "object"}}}}
    for code, text in ((400, "Malformed or invalid request (problem+json)"), (401, "No valid bearer token"),
                       (403, "Outside the principal's policies"), (404, "Unknown resource"),
                       (409, "Conflicts with the resource's state"), (413, "Body too large"),
                       (415, "Body is not JSON"), (422, "Body fails validation"),
                       (429, "A broker capacity limit is reached; retry later (Retry-After)"))
}


def _never_served(spec: HotRouteSpec) -> Any:
    """A stand-in endpoint with the route's signature, so FastAPI documents its parameters and body."""

    async def documented_only(**_: Any) -> NoReturn:  # pragma: no cover - the front serves this path first
        raise RuntimeError(f"{spec.method} {spec.path} is served by the hot path, never by FastAPI")

    params = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=str, default=PathParam())
              for name in spec.path_params]
    params.append(inspect.Parameter("body", inspect.Parameter.KEYWORD_ONLY, annotation=spec.request,
                                    default=Body(examples=[spec.example] if spec.example else None)))
    documented_only.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    documented_only.__name__ = spec.endpoint.__name__
    return documented_only


def document(app: FastAPI, specs: list[HotRouteSpec]) -> None:
    """Add each hot route to FastAPI's routes, for ``/openapi.json`` and ``/docs`` only."""
    for spec in specs:
        app.add_api_route(spec.path, _never_served(spec), methods=[spec.method], response_model=spec.response,
                          summary=spec.summary, tags=[spec.tag], responses=_ERRORS,
                          description=f"{spec.summary}. Served by the raw ASGI front (hot path).")
