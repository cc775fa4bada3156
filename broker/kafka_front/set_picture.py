"""A broker set's node's picture for its Kafka front: the members' Kafka addresses (from their registrations in etcd),
who leads, who is in sync (the node's standing) and whether this node's leader services are up; ``view()`` is
set_view.SetView.

A member's Kafka address is what it advertises (``HALFMQ_BROKER_KAFKA_ADVERTISE``, else its host and Kafka port), which
only it knows: each node writes it in its registration under ``nodes/`` (runtime.SetRoles.registration, the ``kafka``
field), and the others read it there (``next_read``: soon while a member's is missing, as a client that read a Metadata
naming the leader alone has no other node to ask if it dies; then less often, to learn an address that changed).

Metadata names the members that are alive as Kafka's names its live brokers: this node, the leader and the in-sync
set (a killed member leaves it within ``replica_lag_time``; kafka-python raises a refused connection to a broker
Metadata named out of its consumer instead of asking another). Every member is each partition's replica, the in-sync
set its ISR, the others its offline replicas. A member whose address is not known yet is left out; this node is
always in.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Iterable
from typing import Any, Protocol

from halfmq.broker.config import parse_kafka_address

from .set_view import Broker, SetView

log = logging.getLogger(__name__)

FIRST_READ = 0.5  # seconds before the registrations are read again while a member's Kafka address is missing
LATEST_READ = 30.0  # the longest wait: a member down for days costs one read of etcd per node each half minute


class SetMember(Protocol):
    """What a set's node tells its Kafka front (cluster.node.ClusterNode is one)."""

    def leader_and_term(self) -> tuple[str | None, int]: ...

    def in_sync_members(self) -> frozenset[str] | None: ...

    async def registrations(self) -> list[Any]: ...

    async def post_to_leader_as(self, path: str, json: Any, token: str | None) -> Any: ...


def kafka_node_ids(members: Iterable[str]) -> dict[str, int]:
    """A member's Kafka node id: its place among the sorted member ids, from 1 (the same on every node)."""
    return {member: i + 1 for i, member in enumerate(sorted(members))}


def kafka_address(host: str, port: int) -> str:
    """``host:port`` as a registration carries it (``[addr]:port`` for IPv6), read back by config.parse_kafka_address."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def next_read(missing: bool, waited: float | None, first: float = FIRST_READ, latest: float = LATEST_READ) -> float:
    """Seconds until the registrations are read again, having ``waited`` before the last read (None: it was the
    first): while a member's address is missing, ``first`` and twice as long each time up to ``latest``; once every
    member's is known, ``latest`` (a member that comes back advertising another address is learned within it)."""
    if not missing:
        return latest
    return first if waited is None else min(latest, waited * 2)


class KafkaSetPicture:
    """One node's picture of its set for Kafka's clients, asked of ``member`` at each ``view()``."""

    def __init__(self, own: str, members: Iterable[str], own_address: tuple[str, int], member: SetMember) -> None:
        self.ids = kafka_node_ids(members)
        self.own = own
        self.addresses: dict[str, tuple[str, int]] = {own: own_address}
        self.member = member
        self.leading = False  # set by the front once the leader's services are up, cleared before they close
        self._task: asyncio.Task[None] | None = None

    def view(self) -> SetView:
        leader, term = self.member.leader_and_term()
        in_sync = self.member.in_sync_members()
        alive = set(self.ids) if in_sync is None else {self.own, *in_sync, *([leader] if leader else [])}
        brokers = tuple(sorted((Broker(self.ids[m], *address) for m, address in self.addresses.items()
                                if m in self.ids and m in alive), key=lambda b: b.node_id))
        isr = tuple(b.node_id for b in brokers) if in_sync is None else tuple(sorted(self.ids[m] for m in in_sync if m in self.ids))
        return SetView(own=self.ids.get(self.own, 0), brokers=brokers, leader=self.ids.get(leader) if leader else None,
                       leading=self.leading, epoch=term, replicas=tuple(sorted(self.ids.values())), in_sync=isr)

    @property
    def missing(self) -> bool:
        """Whether a member's Kafka address is not known yet."""
        return len(self.addresses) < len(self.ids)

    def learn(self, registrations: Iterable[Any]) -> None:
        """The Kafka addresses the members' registrations name (values as JSON text or bytes)."""
        for value in registrations:
            try:
                found = json.loads(value)
                member, address = found.get("node_id"), found.get("kafka")
                if member in self.ids and address and member != self.own:
                    self.addresses[member] = parse_kafka_address(address)
            except (ValueError, TypeError, AttributeError):
                log.warning("Kafka front: a registration that names no Kafka address: %r", value)

    async def refresh(self) -> None:
        """Read the registrations while the node runs, at the pace ``next_read`` says."""
        waited: float | None = None
        while True:
            with contextlib.suppress(Exception):  # etcd away: asked again
                self.learn([kv.value for kv in await self.member.registrations()])
            waited = next_read(self.missing, waited)
            await asyncio.sleep(waited)

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self.refresh())

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
