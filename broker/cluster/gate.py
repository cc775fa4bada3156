"""In a broker set only the leader serves clients: everything else answers 421 NOT_LEADER with the leader's URL.

An ASGI wrapper in front of the whole app, so the hot path needs no change; the
cluster view, replication, health and metrics stay open on every node, and so do the console's Broker set page,
login and static files. The console's other pages answer a readable page instead of the JSON
(broker/api/console/follower.py).
"""

from __future__ import annotations

from typing import Any

import orjson

from halfmq.broker.api.console.follower import SERVED_ON_EVERY_NODE, is_console, not_leader_page
from halfmq.broker.api.problems import PROBLEM

from .errors import NotLeader

OPEN_PATHS = ("/healthz", "/metrics", "/v1/cluster", "/v1/replication/")


class LeaderGate:
    def __init__(self, app: Any, state: Any) -> None:
        self.app = app
        self.state = state

    def __getattr__(self, name: str) -> Any:
        return getattr(self.app, name)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and not scope["path"].startswith(OPEN_PATHS + SERVED_ON_EVERY_NODE):
            node = getattr(self.state, "cluster", None)
            if node is None or not node.writable:
                await _refuse(scope["path"], node.not_leader() if node is not None else None, send)
                return
        await self.app(scope, receive, send)


async def _refuse(path: str, error: NotLeader | None, send: Any) -> None:
    """421 NOT_LEADER: problem+json to an API client, a readable page to the console (both name the leader in ``location``)."""
    leader = error.extra.get("leader_url") if error else None
    if is_console(path):
        body, headers = not_leader_page(path, leader, error.detail if error else "this node is starting")
    else:
        body = orjson.dumps(error.to_problem(path) if error else {"code": "NOT_LEADER", "status": 421, "title": "starting",
                                                                  "retriable": True})
        headers = [(b"content-type", PROBLEM.encode()), (b"content-length", str(len(body)).encode())]
        if leader:
            headers.append((b"location", leader.encode()))
    await send({"type": "http.response.start", "status": 421, "headers": headers})
    await send({"type": "http.response.body", "body": body})
