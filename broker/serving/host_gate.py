"""Before anything else: a request whose Host is none of the server's names gets 400 HOST_NOT_ALLOWED.

The one gate of every halfmq HTTP server, so a DNS-rebinding page reaches none of them: the broker's outermost
ASGI layer (outside a set's leader gate and the hot front: hot routes, FastAPI's, the console, health and
metrics), and the order and credit services' outermost middleware (``POST /orders``, ``/refund``, ``/pay``, the
check-back endpoint, health). The decision is ``allowed_hosts``; the broker's console calls its API through the
front inside this gate, as the broker itself.
"""

from __future__ import annotations

from typing import Any

import orjson

from halfmq.errors import PROBLEM_JSON, HostNotAllowed

from .allowed_hosts import HostAllowList

PROBLEM = PROBLEM_JSON.encode()


def host_header(scope: Any) -> str | None:
    for name, value in scope["headers"]:
        if name == b"host":
            return value.decode("latin-1")
    return None


class HostGate:
    """``inner`` behind the allow-list; ``setting`` names the variable that lists more names (in the refusal's detail).

    An ASGI app of its own (the broker wraps its front in it) and a Starlette middleware (``app.add_middleware(HostGate,
    allowed=..., setting=...)``, the services)."""

    def __init__(self, inner: Any, allowed: HostAllowList, setting: str) -> None:
        self.inner = inner
        self.allowed = allowed
        self.setting = setting

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            host = host_header(scope)
            if not self.allowed.allows(host):
                await self._refuse(host, scope["path"], send)
                return
        await self.inner(scope, receive, send)

    async def _refuse(self, host: str | None, path: str, send: Any) -> None:
        error = HostNotAllowed(f"this server does not answer to Host {host!r}: reach it by one of its names, or list this one in {self.setting}")
        body = orjson.dumps(error.to_problem(path))
        await send({"type": "http.response.start", "status": error.status, "headers": [
            (b"content-type", PROBLEM), (b"content-length", str(len(body)).encode()), (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body})
