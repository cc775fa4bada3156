"""A broker set's routes are routes of the one table: the front serves them, /openapi.json documents them."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest

from halfmq import wire
from halfmq.broker.cluster.catch_up import LOG_START_HEADER, SNAPSHOT_ENTRIES_HEADER, SNAPSHOT_PART_BYTES, SNAPSHOT_SIZE_HEADER
from halfmq.broker.cluster.follower import HISTORY_HEADER, TERM_HEADER
from halfmq.broker.cluster.replica_tracker import ReplicaTracker
from halfmq.broker.cluster.term_history import TermHistory
from halfmq.broker.runtime import BrokerRuntime
from halfmq.broker.store import state_snapshot
from halfmq.broker.store.message_store import MessageStore
from halfmq.errors import NotLeader
from tests.support.fake_cluster_node import app_with_fake_node

CLUSTER_ROUTES = ["GET /v1/cluster", "GET /v1/replication/position", "GET /v1/replication/term-end", "GET /v1/replication/snapshot"]


class _Node:
    """What the routes ask of a leading node, no etcd behind it."""

    def __init__(self, state: Any, tmp_path: Path) -> None:
        self.state, self.writable, self.term, self.node_id = state, True, 4, "n1"
        self.settings = SimpleNamespace(data_dir=tmp_path)
        self.history = TermHistory(tmp_path / "term-history.json")
        self.history.begin(4, 0)
        self.tracker = ReplicaTracker("n1", 3, lag_time=2.0)
        self.tracker.reset(frozenset({"n1", "n2", "n3"}))
        self.appended = asyncio.Event()

    @property
    def store(self) -> MessageStore:
        rt: BrokerRuntime = self.state.runtime
        return rt.store

    def not_leader(self) -> NotLeader:
        return NotLeader("a newer term leads", leader_url=None)

    def picture_for(self, follower: str) -> str | None:
        return json.dumps({"leader": "n1", "in_sync": ["n1"], "nodes": []}) if follower == "n2" else None

    async def view(self) -> dict[str, Any]:
        return {"node_id": "n1", "role": "leader", "term": 4, "writable": True, "leader": {"node_id": "n1", "url": "http://n1"},
                "in_sync": ["n1"], "ack": "quorum", "cluster_size": 1, "etcd_error": None, "log_end": 0, "durable_offset": 0,
                "high_watermark": 0, "nodes": [{"node_id": "n1", "url": "http://n1", "role": "leader", "durable_offset": 0, "log_end": 0}]}


@pytest.fixture
async def leader(tmp_path: Path) -> AsyncIterator[tuple[httpx.AsyncClient, Any]]:
    async with app_with_fake_node(tmp_path, lambda state: _Node(state, tmp_path)) as served:
        yield served


async def test_a_broker_set_documents_its_routes_from_the_table(leader: tuple[httpx.AsyncClient, Any]) -> None:
    _, app = leader
    paths = app.openapi()["paths"]
    operations = {f"{m.upper()} {p}" for p, ops in paths.items() for m in ops}
    assert set(CLUSTER_ROUTES) <= operations
    assert not {"POST /v1/replication/fetch", "POST /v1/replication/ack"} & operations  # gone: the stream carries both
    assert paths["/v1/replication/snapshot"]["get"]["responses"]["200"]["content"].keys() == {"application/octet-stream"}


async def test_the_cluster_view_answers_its_wire_shape_and_no_state_is_copied_beside_the_log(leader: tuple[httpx.AsyncClient, Any]) -> None:
    client, _ = leader
    wire.decode((await client.get("/v1/cluster")).json(), wire.ClusterView)
    assert (await client.get("/v1/replication/state")).status_code == 404  # acks, topics, producers, the key: records in the log


async def test_term_end_answers_json_and_the_term_in_a_header(leader: tuple[httpx.AsyncClient, Any]) -> None:
    client, _ = leader
    answer = await client.get("/v1/replication/term-end", params={"term": 4, "node_id": "n2"})
    assert answer.status_code == 200
    assert answer.json() == {"end_offset": 0, "term": 4}
    assert answer.headers[TERM_HEADER] == "4"
    missing = await client.get("/v1/replication/term-end", params={"node_id": "n2"})
    assert missing.status_code == 400 and missing.json()["errors"][0]["loc"] == ["query", "term"]


async def test_a_node_answers_its_position_whatever_its_role(leader: tuple[httpx.AsyncClient, Any]) -> None:
    client, app = leader
    await client.post("/v1/topics", json={"name": "T", "queues": 1})
    await client.post("/v1/topics/T/messages", json={"messages": [{"body": "hello"}]})
    app.state.cluster.writable = False  # a follower, or a leader past its fence
    position = wire.decode((await client.get("/v1/replication/position")).json(), wire.Position)
    assert (position.node_id, position.last_term) == ("n1", 4)
    assert position.durable_offset == app.state.runtime.store.flushed_offset > 0


async def test_the_leaders_snapshot_is_answered_in_parts_with_its_size_entries_and_log_start(
        leader: tuple[httpx.AsyncClient, Any], tmp_path: Path) -> None:
    client, app = leader
    store = app.state.runtime.store
    missing = await client.get("/v1/replication/snapshot", params={"node_id": "n2"})
    assert missing.status_code == 404 and missing.json()["code"] == "STATE_SNAPSHOT_NOT_FOUND"
    state_snapshot.save(state_snapshot.path_of(store), state_snapshot.StateSnapshot(5, 0, 0, 0, (), {"pad": "x" * (3 << 20)}))
    whole = state_snapshot.path_of(store).read_bytes()
    first = await client.get("/v1/replication/snapshot", params={"node_id": "n2"})
    assert first.status_code == 200 and len(first.content) == SNAPSHOT_PART_BYTES  # bounded parts, never the whole file
    assert (first.headers[SNAPSHOT_SIZE_HEADER], first.headers[SNAPSHOT_ENTRIES_HEADER]) == (str(len(whole)), "5")
    assert first.headers[LOG_START_HEADER] == "0" and json.loads(first.headers[HISTORY_HEADER]) == [[4, 0]]
    rest = await client.get("/v1/replication/snapshot", params={"node_id": "n2", "entries": 5, "offset": SNAPSHOT_PART_BYTES})
    assert rest.content == whole[SNAPSHOT_PART_BYTES:2 * SNAPSHOT_PART_BYTES]
    other = await client.get("/v1/replication/snapshot", params={"node_id": "n2", "entries": 4})
    assert other.status_code == 404
