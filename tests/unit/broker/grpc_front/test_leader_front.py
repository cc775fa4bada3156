"""What a broker set's node registers for its gRPC front, and which addresses the leader's routes name."""

from __future__ import annotations

import asyncio
import json

import pytest

from halfmq.broker.cluster.etcd import EtcdUnavailable
from halfmq.broker.grpc_front.front import LeaderFront, member_addresses

MEMBERS = {"n1": "http://10.0.0.1:10911", "n2": "http://10.0.0.2:10911", "n3": "http://10.0.0.3:10911"}


def test_a_node_registers_its_grpc_address_on_its_advertised_host_beside_its_url() -> None:
    front = LeaderFront("http://10.0.0.1:10911", 8081)
    assert json.loads(front.registration("n1", "http://10.0.0.1:10911")) == {
        "node_id": "n1", "url": "http://10.0.0.1:10911", "grpc": "10.0.0.1:8081"}


def test_a_node_with_its_grpc_front_off_registers_no_grpc_address() -> None:
    assert "grpc" not in json.loads(LeaderFront("http://10.0.0.1:10911", 0).registration("n1", "http://10.0.0.1:10911"))


def test_the_routes_name_every_member_that_registered_a_grpc_address_and_no_stranger() -> None:
    registrations = [{"node_id": "n2", "url": "http://10.0.0.2:10911", "grpc": "10.0.0.2:8081"},
                     {"node_id": "n3", "url": "http://10.0.0.3:10911"},  # its front is off
                     {"node_id": "n9", "url": "http://10.0.0.9:10911", "grpc": "10.0.0.9:8081"},  # not a member
                     {"node_id": "n3", "url": "http://evil:1", "grpc": "evil:8081"},  # not the member's URL
                     "garbage"]
    assert member_addresses(registrations, MEMBERS, "10.0.0.1:8081") == [("10.0.0.1", 8081), ("10.0.0.2", 8081)]


def test_a_leader_that_cannot_read_the_registrations_names_only_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    front = LeaderFront("http://10.0.0.1:10911", 8081)
    started: list = []

    async def start(current, addresses=()) -> None:
        started.append(list(addresses))

    async def unavailable() -> list:
        raise EtcdUnavailable("etcd is down")

    monkeypatch.setattr(front.front, "start", start)
    asyncio.run(front.lead(lambda: None, unavailable, MEMBERS))
    assert started == [[("10.0.0.1", 8081)]]


def test_a_leader_elected_before_every_member_registered_names_the_late_ones_once_they_register(monkeypatch: pytest.MonkeyPatch) -> None:
    front = LeaderFront("http://10.0.0.1:10911", 8081)
    late = {"node_id": "n2", "url": "http://10.0.0.2:10911", "grpc": "10.0.0.2:8081"}
    later = {"node_id": "n3", "url": "http://10.0.0.3:10911", "grpc": "10.0.0.3:8081"}
    seen: list[list] = [[], [late], [late, later]]
    named: list[list] = []

    class Service:
        def name(self, addresses) -> None:
            named.append(list(addresses))

    async def start(current, addresses=()) -> None:
        named.append(list(addresses))
        front.front.service = Service()

    class Row:
        def __init__(self, info) -> None:
            self.info = info

        def json(self):
            return self.info

    async def registrations() -> list:
        return [Row(info) for info in (seen.pop(0) if len(seen) > 1 else seen[0])]

    async def run() -> None:
        monkeypatch.setattr(front.front, "start", start)
        await front.lead(lambda: None, registrations, MEMBERS)
        assert front._completing is not None
        await asyncio.wait_for(front._completing, timeout=10)

    front.refresh_every = 0
    asyncio.run(run())
    assert named == [[("10.0.0.1", 8081)], [("10.0.0.1", 8081), ("10.0.0.2", 8081)],
                     [("10.0.0.1", 8081), ("10.0.0.2", 8081), ("10.0.0.3", 8081)]]
