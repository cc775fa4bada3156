"""What a 405's ``Allow`` lists: every method some route serves on the path (RFC 9110, 15.5.6).

The route table (router.py) answers this for /v1; these helpers do it for what FastAPI still serves.

Starlette names only the first route whose path matched, so ``/v1/topics``
(GET and POST, two routes) would claim to take POST alone. Asking the routes
about each method keeps this independent of how FastAPI nests included routers.
"""

from __future__ import annotations

from collections.abc import Iterable

from starlette.routing import BaseRoute, Match
from starlette.types import Scope

METHODS = ("DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT")


def serves(routes: Iterable[BaseRoute], scope: Scope) -> bool:
    """Whether a route takes this method on this path."""
    return any(route.matches(scope)[0] is Match.FULL for route in routes)


def allowed_methods(routes: Iterable[BaseRoute], scope: Scope) -> set[str]:
    routes = list(routes)
    return {method for method in METHODS if serves(routes, {**scope, "method": method})}


def allow_header(methods: Iterable[str]) -> str:
    return ", ".join(sorted(methods))
