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
from operator import itemgetter
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import msgspec
from pydantic import BaseModel

if TYPE_CHECKING:
    from .front import ApiRequest, Reply

Endpoint = Callable[["ApiRequest"], Awaitable["Reply"]]
JSON = "application/json"


@dataclass(frozen=True, eq=False)
class Route:
    """``method path`` served by ``endpoint``, with what the document says about it.

    ``request`` is the JSON body the endpoint decodes (a ``halfmq.wire`` request struct), ``answer`` the shape of a
    success (a ``halfmq.wire`` struct), ``params`` the path and query parameters
    the front checks before the endpoint runs (a pydantic model; path ones
    first). ``public`` routes are answered without a bearer token.

    In a broker set (broker/runtime/leader_gate.py) a node that does not lead serves only two kinds of route and
    answers every other one 421 NOT_LEADER: ``on_follower`` ones, reads whose answer a follower has too
    (bounded by what the leader acknowledged: store/visible_reads.py), always GETs; and ``peer`` ones, the
    nodes' own calls to each other (replication), which decide for themselves whom they answer.
    """

    method: str
    path: str
    endpoint: Endpoint
    summary: str
    tag: str
    request: type[msgspec.Struct] | None = None
    answer: type | None = None
    params: type[BaseModel] | None = None
    status: int = 200
    example: dict[str, Any] = field(default_factory=dict)
    public: bool = False
    on_follower: bool = False
    peer: bool = False
    media_type: str = JSON
    segments: tuple[tuple[str, bool], ...] = field(init=False, repr=False)
    plain: bool = field(init=False, repr=False)  # not public, no parameters: the front only asks who it is
    raw_media_type: bytes = field(init=False, repr=False)
    _literals: Callable[[list[str]], tuple[str, ...]] = field(init=False, repr=False)
    _literal_values: tuple[str, ...] = field(init=False, repr=False)
    _params: tuple[tuple[str, int], ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.on_follower and self.method != "GET":
            raise ValueError(f"{self.method} {self.path}: only a GET may be served by a follower (on_follower)")
        segments = tuple((s[1:-1], True) if s.startswith("{") else (s, False) for s in self.path.split("/"))
        literal_at = [i for i, (_, is_param) in enumerate(segments) if not is_param]  # always 2+: "" and a name
        object.__setattr__(self, "segments", segments)
        object.__setattr__(self, "plain", not self.public and self.params is None)
        object.__setattr__(self, "raw_media_type", self.media_type.encode())
        object.__setattr__(self, "_literals", itemgetter(*literal_at))
        object.__setattr__(self, "_literal_values", tuple(segments[i][0] for i in literal_at))
        object.__setattr__(self, "_params", tuple((text, i) for i, (text, is_param) in enumerate(segments) if is_param))

    @property
    def path_params(self) -> list[str]:
        return [text for text, is_param in self.segments if is_param]

    def match(self, parts: list[str]) -> dict[str, str] | None:
        """The path parameters when ``parts`` (the path split on ``/``) fits the template, else None."""
        if len(parts) != len(self.segments):
            return None
        return self.match_parts(parts)

    def match_parts(self, parts: list[str]) -> dict[str, str] | None:
        """``match`` for ``parts`` known to be as many as the template's segments."""
        if self._literals(parts) != self._literal_values:
            return None
        params = {}
        for name, i in self._params:  # a loop, not a comprehension: no frame of its own (Python 3.11)
            part = parts[i]
            if not part:
                return None
            params[name] = part
        return params


_NO_ROUTES: list[Route] = []


class Router:
    """The table, in order; looked up by the path's length and its third segment (``topics`` in /v1/topics/...).

    The index only narrows the candidates (in table order) so a route late in the table, a producer
    transaction's step say, is not matched against every route before it; the match itself is ``Route.match``.
    """

    def __init__(self, routes: Iterable[Route]) -> None:
        self.routes = list(routes)
        seen = [(r.method, r.path) for r in self.routes]
        if len(seen) != len(set(seen)):
            raise ValueError(f"a route is in the table twice: {sorted(s for s in seen if seen.count(s) > 1)}")
        self._any_third: dict[int, list[Route]] = {}  # routes whose third segment is a parameter, by length
        self._index: dict[tuple[int, str], list[Route]] = {}
        for route in self.routes:
            n, third = len(route.segments), _third(route)
            if third is None:
                self._any_third.setdefault(n, []).append(route)
        for route in self.routes:
            n, third = len(route.segments), _third(route)
            if third is not None and (n, third) not in self._index:
                self._index[(n, third)] = [r for r in self.routes if len(r.segments) == n and _third(r) in (third, None)]

    def candidates(self, parts: list[str]) -> list[Route]:
        n = len(parts)
        return self._index.get((n, parts[2] if n > 2 else ""), self._any_third.get(n, []))  # resolve inlines this

    def resolve(self, method: str, path: str) -> tuple[Route, dict[str, str]] | frozenset[str] | None:
        """The route and its parameters; else the methods served on this path (a 405), or None (not ours)."""
        parts = path.split("/")
        n = len(parts)
        allowed = None
        for route in self._index.get((n, parts[2] if n > 2 else "")) or self._any_third.get(n, _NO_ROUTES):
            params = route.match_parts(parts)  # the index holds routes of this length only
            if params is None:
                continue
            if route.method == method:
                return route, params
            allowed = allowed or set()
            allowed.add(route.method)
        return frozenset(allowed) if allowed else None

    def served_by_follower(self, method: str, path: str) -> bool:
        """Whether a node that does not lead serves ``method path`` (an ``on_follower`` or ``peer`` route); else 421."""
        found = self.resolve(method, path)
        return type(found) is tuple and (found[0].on_follower or found[0].peer)

    def resolve_raw(self, method: str, raw_path: bytes) -> tuple[Route, dict[str, str]] | None:
        """``resolve`` on the path as sent, each segment decoded on its own: a name holding an encoded ``/``
        (``/v1/topics/a%2Fb/messages``) stays one parameter, so the front can refuse the name rather than the route."""
        try:
            parts = [unquote(part, errors="strict") for part in raw_path.decode("ascii").split("/")]
        except UnicodeError:
            return None
        for route in self.candidates(parts):
            params = route.match(parts)
            if params is not None and route.method == method:
                return route, params
        return None

    def serves_path(self, path: str) -> bool:
        parts = path.split("/")
        return any(route.match(parts) is not None for route in self.candidates(parts))


def _third(route: Route) -> str | None:
    """The route's third segment when it is a literal (``""`` for a path of two segments), else None."""
    if len(route.segments) <= 2:
        return ""
    text, is_param = route.segments[2]
    return None if is_param else text
