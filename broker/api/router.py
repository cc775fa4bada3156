"""The one route table of HTTP API v1: a route is a value, one loop decides the match and the 405.

Starlette's pattern (``Route(path, endpoint, methods)``), kept small: a route is
one method on one path template, split into literal and parameter segments and
matched without regexes. The front (front.py) asks ``Router.resolve`` once per
request; the OpenAPI document (openapi.py) walks the same list, so a served
route cannot be missing from the document. Every route's endpoint has one
shape, ``async (ApiRequest) -> Reply``, whether it is a send or a listing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

if TYPE_CHECKING:
    from .front import ApiRequest, Reply

Endpoint = Callable[["ApiRequest"], Awaitable["Reply"]]
JSON = "application/json"


@dataclass(frozen=True, eq=False)
class Route:
    """``method path`` served by ``endpoint``, with what the document says about it.

    ``request`` is the JSON body the endpoint decodes, ``answer`` the shape of a
    success (a ``halfmq.wire`` struct), ``params`` the path and query parameters
    the front checks before the endpoint runs (a pydantic model; path ones
    first). ``public`` routes are answered without a bearer token.
    """

    method: str
    path: str
    endpoint: Endpoint
    summary: str
    tag: str
    request: type[BaseModel] | None = None
    answer: type | None = None
    params: type[BaseModel] | None = None
    status: int = 200
    example: dict[str, Any] = field(default_factory=dict)
    public: bool = False
    media_type: str = JSON
    segments: tuple[tuple[str, bool], ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        segments = tuple((s[1:-1], True) if s.startswith("{") else (s, False) for s in self.path.split("/"))
        object.__setattr__(self, "segments", segments)

    @property
    def path_params(self) -> list[str]:
        return [text for text, is_param in self.segments if is_param]

    def match(self, parts: list[str]) -> dict[str, str] | None:
        """The path parameters when ``parts`` (the path split on ``/``) fits the template, else None."""
        if len(parts) != len(self.segments):
            return None
        params = {}
        for part, (text, is_param) in zip(parts, self.segments, strict=True):
            if is_param:
                if not part:
                    return None
                params[text] = part
            elif part != text:
                return None
        return params


class Router:
    """The table, in order: the hot routes first, so a send is matched after as few tries as before."""

    def __init__(self, routes: Iterable[Route]) -> None:
        self.routes = list(routes)
        seen = [(r.method, r.path) for r in self.routes]
        if len(seen) != len(set(seen)):
            raise ValueError(f"a route is in the table twice: {sorted(s for s in seen if seen.count(s) > 1)}")

    def resolve(self, method: str, path: str) -> tuple[Route, dict[str, str]] | frozenset[str] | None:
        """The route and its parameters; else the methods served on this path (a 405), or None (not ours)."""
        parts = path.split("/")
        allowed: set[str] = set()
        for route in self.routes:
            params = route.match(parts)
            if params is None:
                continue
            if route.method == method:
                return route, params
            allowed.add(route.method)
        return frozenset(allowed) or None

    def serves_path(self, path: str) -> bool:
        parts = path.split("/")
        return any(route.match(parts) is not None for route in self.routes)
