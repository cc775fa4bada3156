"""What a node that does not lead serves: the table's ``on_follower`` reads (GETs only) and ``peer`` calls; everything else
answers 421 NOT_LEADER. The route table decides (Route.on_follower, Route.peer), not a list of paths beside it."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from halfmq.broker.api.router import Route, Router
from halfmq.broker.api.routes import cluster as cluster_routes
from halfmq.broker.api.table import ROUTES
from halfmq.broker.cluster.follower import STREAM_PATH
from halfmq.broker.runtime.leader_gate import LeaderGate
from halfmq.errors import NotLeader

TABLE = [*ROUTES, *cluster_routes.ROUTES]
LEADER_URL = "http://n2.test:8080"
READS = {  # what a follower answers itself: a change here is a change of what a set promises its readers
    ("GET", "/healthz"), ("GET", "/metrics"), ("GET", "/v1/cluster"), ("GET", "/v1/topics"), ("GET", "/v1/topics/{topic}"),
    ("GET", "/v1/topics/{topic}/queues/{queue_id}/messages"), ("GET", "/v1/consumer-groups/{group}/dlq"),
}
PEER = {("GET", "/v1/replication/term-end"), ("GET", "/v1/replication/position"), ("GET", "/v1/replication/snapshot")}


class _Node:
    def __init__(self, writable: bool) -> None:
        self.writable = writable

    def not_leader(self) -> NotLeader:
        return NotLeader("node n1 is a follower", leader_url=LEADER_URL)


async def _through_gate(node: _Node, method: str, path: str) -> tuple[bool, int | None]:
    """(whether the app behind the gate was reached, the gate's own status if it answered)."""
    reached, sent = False, []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        nonlocal reached
        reached = True

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    gate = LeaderGate(app, SimpleNamespace(cluster=node), Router(TABLE))
    await gate({"type": "http", "method": method, "path": path, "headers": []}, None, send)
    return reached, sent[0]["status"] if sent else None


def _concrete(route: Route) -> str:
    return "/".join("x1" if is_param else text for text, is_param in route.segments)


def test_every_route_a_follower_serves_is_a_get_and_they_are_the_reads_named_here() -> None:
    served = {(r.method, r.path) for r in TABLE if r.on_follower}
    assert all(r.method == "GET" for r in TABLE if r.on_follower)
    assert served == READS
    assert {(r.method, r.path) for r in TABLE if r.peer} == PEER


def test_a_write_cannot_be_declared_servable_by_a_follower() -> None:
    async def endpoint(request: Any) -> Any: ...

    with pytest.raises(ValueError, match="only a GET"):
        Route("POST", "/v1/topics/{topic}/messages", endpoint, "send", "topics", on_follower=True)


@pytest.mark.parametrize("route", TABLE, ids=[f"{r.method} {r.path}" for r in TABLE])
async def test_a_follower_passes_on_exactly_its_reads_and_the_peer_calls_and_answers_421_to_the_rest(route: Route) -> None:
    reached, status = await _through_gate(_Node(writable=False), route.method, _concrete(route))
    if route.on_follower or route.peer:
        assert reached and status is None
    else:
        assert not reached and status == 421


@pytest.mark.parametrize("route", TABLE, ids=[f"{r.method} {r.path}" for r in TABLE])
async def test_a_leader_passes_on_every_route(route: Route) -> None:
    assert await _through_gate(_Node(writable=True), route.method, _concrete(route)) == (True, None)


@pytest.mark.parametrize(("method", "path", "served"), [
    ("GET", "/console/cluster", True), ("GET", "/console/topics/fragment", True), ("GET", "/console/static/console.css", True),
    ("GET", "/console", True), ("GET", "/console/login", True), ("POST", "/console/login", True), ("POST", "/console/logout", True),
    ("GET", "/console/transactions", False), ("GET", "/console/groups/fragment", False), ("GET", "/console/topics/other", False),
    ("POST", "/console/topics", False), ("POST", "/console/groups/g/dlq/0/resend", False),
    ("POST", "/console/transactions/C0A8/commit", False), ("HEAD", "/v1/topics", False), ("GET", "/openapi.json", False),
])
async def test_the_console_on_a_follower_serves_its_read_only_pages_and_refuses_every_action(method: str, path: str, served: bool) -> None:
    reached, status = await _through_gate(_Node(writable=False), method, path)
    assert (reached, status) == ((True, None) if served else (False, 421))


async def test_the_replication_streams_websocket_passes_the_gate_of_a_node_not_leading_it_refuses_itself_with_its_code() -> None:
    reached = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        reached.append(scope["path"])

    gate = LeaderGate(app, SimpleNamespace(cluster=_Node(writable=False)), Router(TABLE))
    await gate({"type": "websocket", "path": STREAM_PATH, "headers": []}, None, None)
    assert reached == [STREAM_PATH]  # (api/routes/cluster.replication_stream closes it 4421 NOT_LEADER: a follower knows why)
