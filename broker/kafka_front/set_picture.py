"""A broker set's node's picture for its Kafka front: the members' Kafka addresses (from their registrations in etcd),
who leads (the node's standing) and whether this node's leader services are up; ``view()`` is set_view.SetView.

A member's Kafka address is what it advertises (``HALFMQ_BROKER_KAFKA_ADVERTISE``, else its host and Kafka port), which
only it knows: each node writes it in its registration under ``nodes/`` (runtime.SetRoles.registration, the ``kafka``
field), and the others read it there, again every ``refresh_every`` seconds while a member's is missing (a set's first
start: soon, as a client that read a Metadata naming the leader alone has no other node to ask if it dies). A member
whose address is not known yet is left out of Metadata; this node is always in it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from halfmq.broker.config import parse_kafka_address

from .set_view import Broker, SetView

log = logging.getLogger(__name__)


def kafka_node_ids(members: Iterable[str]) -> dict[str, int]:
    """A member's Kafka node id: its place among the sorted member ids, from 1 (the same on every node)."""
    return {member: i + 1 for i, member in enumerate(sorted(members))}


def kafka_address(host: str, port: int) -> str:
    """``host:port`` as a registration carries it (``[addr]:port`` for IPv6), read back by config.parse_kafka_address."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class SetPicture:
    """``leader()`` -> (the leader's member id or None, the term); ``registrations()`` -> etcd's ``nodes/`` key-values."""

    def __init__(self, own: str, members: Iterable[str], own_address: tuple[str, int],
                 leader: Callable[[], tuple[str | None, int]],
                 registrations: Callable[[], Awaitable[Iterable[Any]]], refresh_every: float = 0.5) -> None:
        self.ids = kafka_node_ids(members)
        self.own = own
        self.addresses: dict[str, tuple[str, int]] = {own: own_address}
        self.leader = leader
        self.registrations = registrations
        self.refresh_every = refresh_every
        self.leading = False  # set by the front once the leader's services are up, cleared before they close
        self._task: asyncio.Task[None] | None = None

    def view(self) -> SetView:
        leader, term = self.leader()
        brokers = tuple(sorted((Broker(self.ids[m], *address) for m, address in self.addresses.items() if m in self.ids),
                               key=lambda b: b.node_id))
        return SetView(own=self.ids.get(self.own, 0), brokers=brokers, leader=self.ids.get(leader) if leader else None,
                       leading=self.leading, epoch=term)

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
        """Read the registrations until every member's Kafka address is known."""
        while len(self.addresses) < len(self.ids):
            with contextlib.suppress(Exception):  # etcd away: asked again
                self.learn([kv.value for kv in await self.registrations()])
            if len(self.addresses) < len(self.ids):
                await asyncio.sleep(self.refresh_every)

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self.refresh())

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
