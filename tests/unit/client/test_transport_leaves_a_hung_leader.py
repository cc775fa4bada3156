"""A call that waits on a hung node of a set leaves it once another node answers as the writable leader (issue 32).

Three local servers: A takes requests and never answers (a SIGSTOPped leader), B answers as the set's
leader, C as a follower naming B. The client's timeout is an hour, so only the probe of who leads can
explain a call leaving A; no test here waits for a duration: the transport's probe period is a sleep
the test ends (one period for each call A holds, or none at all).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web

from halfmq.client.endpoints import Call
from halfmq.client.retry import async_retrying
from halfmq.client.transport import AsyncTransport
from halfmq.errors import BrokerUnavailable
from tests.support.fake_clock import FakeSleep
from tests.support.loop_steps import run_ready

HOUR = 3600.0


def _view(role: str, leader: str) -> dict[str, Any]:
    return {"node_id": role, "role": role, "term": 7, "writable": role == "leader", "leader": {"node_id": "b", "url": leader},
            "in_sync": None, "ack": "quorum", "cluster_size": 3, "etcd_error": None, "log_end": 0, "durable_offset": 0,
            "high_watermark": 0, "nodes": []}


class Node:
    def __init__(self, role: str) -> None:
        self.role = role
        self.bodies: list[bytes] = []
        self.views = 0  # how often it was asked who leads
        self.held: asyncio.Queue[bytes] = asyncio.Queue()  # the calls a hung node holds, as they arrive
        self.url = ""
        self.leader = ""

    async def cluster(self, request: web.Request) -> web.Response:
        self.views += 1
        if self.role == "hung":
            await asyncio.Event().wait()
        return web.json_response(_view(self.role, self.leader))

    async def send(self, request: web.Request) -> web.Response:
        self.bodies.append(await request.read())
        if self.role == "hung":
            self.held.put_nowait(self.bodies[-1])
            await asyncio.Event().wait()
        if self.role == "follower":
            return web.json_response({"code": "NOT_LEADER", "status": 421, "title": "not leader", "leader_url": self.leader},
                                     status=421, content_type="application/problem+json")
        return web.json_response({"stored": True})


@pytest.fixture
async def nodes() -> AsyncIterator[dict[str, Node]]:
    found = {"a": Node("hung"), "b": Node("leader"), "c": Node("follower")}
    runners = []
    for node in found.values():
        app = web.Application()
        app.router.add_get("/v1/cluster", node.cluster)
        app.router.add_post("/v1/echo", node.send)
        runner = web.AppRunner(app, shutdown_timeout=0.1)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        node.url = f"http://127.0.0.1:{runner.addresses[0][1]}"
        runners.append(runner)
    for node in found.values():
        node.leader = found["b"].url
    yield found
    for runner in runners:
        await runner.cleanup()


def _numbered() -> Call[Any]:
    return Call("POST", "/v1/echo", parse=lambda data: data, body={"producer_id": 7, "sequence": 3})


def _a_period_per_call_held(hung: Node) -> Callable[[float], Awaitable[None]]:
    """The transport's sleep: a probe period ends each time ``hung`` takes a call and holds it, and never otherwise."""
    async def period(seconds: float) -> None:
        await hung.held.get()
    return period


async def test_a_call_waiting_on_a_hung_node_leaves_it_once_another_node_answers_as_the_leader(nodes: dict[str, Node]) -> None:
    transport = AsyncTransport(",".join(n.url for n in nodes.values()), timeout=HOUR, sleep=_a_period_per_call_held(nodes["a"]))
    try:
        async with asyncio.timeout(60):  # a hang guard, not a measurement
            with pytest.raises(BrokerUnavailable) as left:
                await transport.call(_numbered())
            assert left.value.sent  # it may have been acted on: only the caller's retry policy repeats it
            assert await transport.call(_numbered()) == {"stored": True}  # the next call starts at the leader
        assert (len(nodes["a"].bodies), len(nodes["b"].bodies)) == (1, 1)
    finally:
        await transport.close()


async def test_a_retried_numbered_call_reaches_the_new_leader_with_its_sequence_number(nodes: dict[str, Node]) -> None:
    transport = AsyncTransport(",".join(n.url for n in nodes.values()), timeout=HOUR, sleep=_a_period_per_call_held(nodes["a"]))
    try:
        async with asyncio.timeout(60):
            assert await async_retrying(3)(transport.call, _numbered()) == {"stored": True}
        assert nodes["b"].bodies == nodes["a"].bodies  # the same producer id and sequence: stored once by the broker
    finally:
        await transport.close()


async def test_a_call_on_one_url_or_a_long_poll_never_probes(nodes: dict[str, Node]) -> None:
    transport = AsyncTransport(nodes["b"].url, timeout=HOUR)
    try:
        assert await transport.call(_numbered()) == {"stored": True}
    finally:
        await transport.close()
    periods = FakeSleep()
    transport = AsyncTransport(",".join(n.url for n in nodes.values()), timeout=HOUR, sleep=periods)
    try:
        long_poll = Call("POST", "/v1/echo", parse=lambda data: data, body={}, timeout=HOUR)
        waiting = asyncio.ensure_future(transport.call(long_poll))
        async with asyncio.timeout(60):  # a hang guard, not a measurement
            await nodes["a"].held.get()  # the long poll waits at A
        await run_ready()
        assert periods.asked == []  # no probe period began: a probing call would leave A at the end of its first
        assert not waiting.done() and [n.views for n in nodes.values()] == [0, 0, 0]
        waiting.cancel()
    finally:
        await transport.close()
