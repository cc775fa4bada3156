"""In a broker set only the leader serves clients: everything else answers 421 NOT_LEADER with the leader's URL.

An ASGI wrapper in front of the whole app, so the hot path needs no change; the
cluster view, replication, health and metrics stay open on every node.
"""

from __future__ import annotations

from typing import Any

import orjson

from halfmq.broker.api.problems import PROBLEM

OPEN_PATHS = ("/healthz", "/metrics", "/v1/cluster", "/v1/replication/")


class LeaderGate:
    def __init__(self, app: Any, state: Any) -> None:
        self.app = app
        self.state = state

    def __getattr__(self, name: str) -> Any:
        return getattr(self.app, name)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and not scope["path"].startswith(OPEN_PATHS):
            node = getattr(self.state, "cluster", None)
            if node is None or not node.writable:
                error = node.not_leader() if node is not None else None
                body = orjson.dumps(error.to_problem(scope["path"]) if error else {"code": "NOT_LEADER", "status": 421,
                                                                                 "title": "starting", "retriable": True})
                headers = [(b"content-type", PROBLEM.encode()), (b"content-length", str(len(body)).encode())]
                leader = error.extra.get("leader_url") if error else None
                if leader:
                    headers.append((b"location", leader.encode()))
                await send({"type": "http.response.start", "status": 421, "headers": headers})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)
