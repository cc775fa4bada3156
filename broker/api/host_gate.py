"""Before anything else: a request whose Host is none of the broker's names gets 400 HOST_NOT_ALLOWED.

The outermost ASGI layer of the broker (outside the leader gate of a set and
the hot front), so every HTTP request meets the allow-list once: hot routes,
FastAPI's, the console, health and metrics. The decision is
``security.allowed_hosts``; the console's own calls to the API go to the front
inside this gate, as the broker itself.
"""

from __future__ import annotations

from typing import Any

from starlette.types import Receive, Scope, Send

from halfmq.broker.security.allowed_hosts import HostAllowList
from halfmq.errors import HostNotAllowed

from .front import _CLOSE, _PROBLEM, _answer, _problem


def host_header(scope: Scope) -> str | None:
    for name, value in scope["headers"]:
        if name == b"host":
            return value.decode("latin-1")
    return None


class HostGate:
    def __init__(self, inner: Any, allowed: HostAllowList) -> None:
        self.inner = inner
        self.allowed = allowed

    def __getattr__(self, name: str) -> Any:  # app.state, routes, openapi() ... as on the app inside
        return getattr(self.inner, name)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            host = host_header(scope)
            if not self.allowed.allows(host):
                error = HostNotAllowed(f"this broker does not answer to Host {host!r}: reach it by one of its names, "
                                       "or list this one in HALFMQ_BROKER_ALLOWED_HOSTS")
                await _answer(send, error.status, _PROBLEM, _problem(error, scope["path"]), _CLOSE)
                return
        await self.inner(scope, receive, send)
