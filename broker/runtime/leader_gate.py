"""In a broker set a node that does not lead serves only what a follower can: the rest answers 421 NOT_LEADER.

An ASGI wrapper in front of the whole app, so the leader's hot path needs no change (a node that may
write passes everything on, asking nothing). On any other node the route table decides
(broker/api/router.py): its ``on_follower`` routes (reads up to the leader's high watermark, the cluster
view, health and metrics) and its ``peer`` routes (replication) are served; every other route answers
421 NOT_LEADER with the leader's URL. The console asks its own table
(broker/console/pages.py: the pages a follower renders, login, static files), and answers the rest
with a readable page that names the leader instead of the JSON (broker/console/follower.py).
"""

from __future__ import annotations

from typing import Any

import orjson

from halfmq.broker.api.problems import PROBLEM
from halfmq.broker.api.router import Router
from halfmq.broker.console.follower import is_console, not_leader_page
from halfmq.broker.console.pages import served_on_follower as console_serves
from halfmq.errors import NotLeader


class LeaderGate:
    def __init__(self, app: Any, state: Any, router: Router) -> None:
        self.app = app
        self.state = state
        self.router = router  # the table the front serves

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            node = getattr(self.state, "cluster", None)
            if (node is None or not node.writable) and not self.serves_on_follower(scope["method"], scope["path"]):
                await _refuse(scope["path"], node.not_leader() if node is not None else None, send)
                return
        await self.app(scope, receive, send)

    def serves_on_follower(self, method: str, path: str) -> bool:
        """Whether a node that may not write serves ``method path``."""
        return console_serves(method, path) if is_console(path) else self.router.served_by_follower(method, path)


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
