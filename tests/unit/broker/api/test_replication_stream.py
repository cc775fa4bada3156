"""The leader's side of the replication stream: runs pushed as the log grows, no more in flight than the bound, refusals
closed with their code. Driven through the app's ASGI entry (a real runtime, the fake node of test_cluster_routes)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest

from halfmq import wire
from halfmq.broker.cluster.follower import STREAM_PATH
from halfmq.broker.cluster.stream_frames import BEHIND, RUN, RUN_MAX_BYTES, SILENT_SECONDS, Run, ack_frame, read_run
from tests.support.fake_cluster_node import app_with_fake_node
from tests.unit.broker.api.test_cluster_routes import _Node

BOUND = 256 * 1024


class Socket:
    """A follower's end of one WebSocket into the app."""

    def __init__(self, app: Any, headers: tuple[tuple[bytes, bytes], ...] = ()) -> None:
        self.inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.outbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        scope = {"type": "websocket", "path": STREAM_PATH, "raw_path": STREAM_PATH.encode(), "query_string": b"",
                 "headers": [(b"host", b"127.0.0.1:8080"), *headers], "scheme": "ws", "subprotocols": []}
        self.inbox.put_nowait({"type": "websocket.connect"})
        self.task = asyncio.get_running_loop().create_task(app(scope, self.inbox.get, self.outbox.put))

    def say(self, data: bytes) -> None:
        self.inbox.put_nowait({"type": "websocket.receive", "bytes": data})

    async def heard(self) -> dict[str, Any]:
        return await asyncio.wait_for(self.outbox.get(), 5)

    async def run(self) -> Run:
        message = await self.heard()
        assert message["type"] == "websocket.send", message
        return read_run(message["bytes"])

    async def close(self) -> None:
        self.inbox.put_nowait({"type": "websocket.disconnect", "code": 1000})
        await asyncio.wait_for(self.task, 5)


def _hello(**fields: Any) -> bytes:
    return msgspec.json.encode(wire.FetchRequest(**{"node_id": "n2", "term": 4, "from_offset": 0, **fields}))


@pytest.fixture
async def leader(tmp_path: Path) -> AsyncIterator[tuple[httpx.AsyncClient, Any]]:
    def node(state: Any) -> _Node:
        made = _Node(state, tmp_path)
        made.settings.replication_in_flight_bytes = BOUND
        return made

    async with app_with_fake_node(tmp_path, node) as served:
        yield served


async def _write(client: httpx.AsyncClient, count: int, size: int) -> None:
    await client.post("/v1/topics", json={"name": "T", "queues": 1})
    for _ in range(count):
        answer = await client.post("/v1/topics/T/messages", json={"messages": [{"body": "x" * size}]})
        assert answer.status_code == 200


async def test_the_leader_pushes_what_is_appended_without_being_asked_and_carries_its_history_once(
        leader: tuple[httpx.AsyncClient, Any]) -> None:
    client, app = leader
    socket = Socket(app)
    assert (await socket.heard())["type"] == "websocket.accept"
    socket.say(_hello())
    await _write(client, 1, 10)
    first = await socket.run()
    assert first.kind == RUN and first.term == 4 and first.from_offset == 0 and first.history == [(4, 0)]
    end = app.state.runtime.store.commit_log.end_offset
    got, sent = len(first.data), first.from_offset + len(first.data)
    socket.say(ack_frame(sent, sent))  # (a follower that acks nothing for a second is pushed nothing: the test after)
    while sent < end:
        run = await socket.run()
        assert run.from_offset == sent and run.history is None
        sent += len(run.data)
        socket.say(ack_frame(sent, sent))
    await _write(client, 1, 10)  # a second write: pushed on the same stream
    later = await socket.run()
    assert later.from_offset == sent and later.data and got
    await socket.close()


async def test_the_leader_stops_pushing_once_the_in_flight_bound_is_past_the_followers_durable_end_until_it_acks(
        leader: tuple[httpx.AsyncClient, Any]) -> None:
    client, app = leader
    await _write(client, 12, 60_000)  # ~720 KB, past the 256 KiB bound
    socket = Socket(app)
    await socket.heard()
    socket.say(_hello())
    pushed = 0
    while pushed < BOUND:
        pushed += len((await socket.run()).data)
    assert pushed < BOUND + RUN_MAX_BYTES  # (runs end at a write group's end: the last one pushed may cross the bound)
    with pytest.raises(TimeoutError):  # held back until the follower reports what it has on disk (keep-alives aside)
        while True:
            assert not (await asyncio.wait_for(socket.run(), 0.3)).data
    socket.say(ack_frame(pushed, pushed))
    assert (await socket.run()).from_offset == pushed
    await socket.close()


@pytest.mark.parametrize(("hello", "code"), [(_hello(term=5), 4421), (_hello(from_offset=10**9), 4409), (b"{", 4400)])
async def test_a_stream_the_leader_cannot_serve_is_closed_with_the_status_and_code_of_its_refusal(
        leader: tuple[httpx.AsyncClient, Any], hello: bytes, code: int) -> None:
    _, app = leader
    socket = Socket(app)
    await socket.heard()
    socket.say(hello)
    closed = await socket.heard()
    assert closed["type"] == "websocket.close" and closed["code"] == code


async def test_a_follower_below_the_log_start_is_told_where_it_starts(leader: tuple[httpx.AsyncClient, Any]) -> None:
    _, app = leader
    app.state.runtime.store.log_start.offset = 4096
    socket = Socket(app)
    await socket.heard()
    socket.say(_hello())
    behind = await socket.run()
    assert behind.kind == BEHIND and behind.from_offset == 4096
    assert (await socket.heard())["code"] == 4416


async def test_a_web_pages_websocket_is_refused_before_it_opens_even_with_auth_off(leader: tuple[httpx.AsyncClient, Any]) -> None:
    _, app = leader
    socket = Socket(app, headers=((b"origin", b"http://evil.example"),))
    closed = await socket.heard()
    assert closed == {"type": "websocket.close", "code": 4403, "reason": "ORIGIN_NOT_ALLOWED"}


async def test_a_follower_silent_for_a_second_is_pushed_no_bytes_until_it_speaks_again(leader: tuple[httpx.AsyncClient, Any]) -> None:
    client, app = leader
    socket = Socket(app)
    await socket.heard()
    socket.say(_hello())
    await asyncio.sleep(SILENT_SECONDS + 0.2)  # wall-clock: the leader's silence rule reads the loop's clock (a stopped follower)
    await _write(client, 1, 10)
    with pytest.raises(TimeoutError):
        while True:
            assert not (await asyncio.wait_for(socket.run(), 0.3)).data  # keep-alives only (every 0.5 s)
    socket.say(ack_frame(0, 0))
    run = await socket.run()
    assert run.from_offset == 0 and run.data
    await socket.close()
