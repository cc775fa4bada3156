"""Starting and stopping the RocketMQ 5 front next to the HTTP one, and its check-back transport.

A single broker starts it from the HTTP app's lifespan; in a broker set the node
starts it when it becomes leader and stops it when it steps down (runtime.SetRoles, asked by cluster/node.py),
so only the leader listens and a client given every node's address reaches it.
Both fronts share one event loop, and the front reads the runtime of the moment
(a role change swaps it). It stays off when the port is 0 or the ``rocketmq``
extra is not installed. With auth on, every call is signed (``request_auth``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import urllib.parse
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

from halfmq.broker.cluster.etcd_errors import EtcdUnavailable
from halfmq.broker.usecases.records import StoredMessage, as_sent

log = logging.getLogger(__name__)


class TelemetryCheckTransport:
    """CheckService's second transport: push the check on a connected producer's telemetry stream."""

    def __init__(self, sessions: Any) -> None:
        self._sessions = sessions

    def connected(self, group: str) -> bool:
        return bool(self._sessions.connected(group))

    def push(self, transaction_id: str, group: str, half: StoredMessage) -> bool:
        from .message_mapping import to_protobuf

        return bool(self._sessions.push_check(group, transaction_id, to_protobuf(as_sent(half))))


class GrpcFront:
    def __init__(self) -> None:
        self.server: Any = None
        self.service: Any = None  # the MessagingService: ``name`` changes the addresses it answers

    async def start(self, current: Callable[[], Any], addresses: Sequence[tuple[str, int]] = ()) -> None:
        """Serve on the current runtime's ``grpc_port``; ``addresses``: every node of a set (host, gRPC port), which
        QueryRoute answers as one Endpoints (a single broker answers its own)."""
        runtime = current()
        settings = runtime.settings
        if not settings.grpc_port or self.server is not None:
            return
        try:
            from .messaging_service import start_server
            from .telemetry_sessions import StreamCaps, TelemetrySessions
        except ImportError as exc:
            log.warning("RocketMQ gRPC front off: %s (pip install 'halfmq[rocketmq]')", exc)
            return
        sessions = TelemetrySessions(settings.grpc_telemetry_outbox_commands, settings.grpc_telemetry_outbox_bytes,
                                     settings.grpc_telemetry_unread_bytes,
                                     StreamCaps(settings.grpc_telemetry_streams_per_principal, settings.grpc_telemetry_streams_per_client))
        try:
            self.server, self.service = await start_server(current, sessions, settings.host, settings.grpc_port, addresses)
        except RuntimeError as exc:
            log.error("RocketMQ gRPC front off: %s", exc)
            return
        if runtime.checks is not None:
            runtime.checks.push_transport = TelemetryCheckTransport(sessions)
        log.info("RocketMQ gRPC front on %s:%d", settings.host, settings.grpc_port)

    async def stop(self) -> None:
        server, self.server = self.server, None
        self.service = None
        if server is not None:
            await server.stop(grace=1.0)


class LeaderFront:
    """A broker set's node's front: on while the node leads, off once it steps down (issue 32, C2).

    Each node registers its gRPC address beside its URL in etcd; the leader's QueryRoute answers every member's as one
    Endpoints, so Apache's clients, given all of them, open one pick-first channel that reaches whichever node leads.
    """

    def __init__(self, url: str, grpc_port: int | None) -> None:
        host = urllib.parse.urlsplit(url).hostname
        self.address = f"{host}:{grpc_port}" if grpc_port and host else None  # as clients reach it: the advertised host
        self.front = GrpcFront()
        self._completing: asyncio.Task | None = None
        self.refresh_every = 2.0  # seconds between reads of the registrations while a member's is missing

    def registration(self, node_id: str, url: str) -> str:
        """The node's value under ``nodes/`` in etcd."""
        return json.dumps({"node_id": node_id, "url": url, **({"grpc": self.address} if self.address else {})})

    async def lead(self, current: Callable[[], Any], registrations: Callable[[], Awaitable[Iterable[Any]]],
                   members: dict[str, str]) -> None:
        """Start serving ``current()``, naming the members' registered addresses (this node's only if etcd does not answer)."""
        if self.address is None:
            return
        addresses = await self._addresses(registrations, members)
        await self.front.start(current, addresses)
        if len(addresses) < len(members) and self.front.service is not None:  # a node not registered yet (a set's first start)
            self._completing = asyncio.get_running_loop().create_task(self._complete(registrations, members))

    async def _addresses(self, registrations: Callable[[], Awaitable[Iterable[Any]]], members: dict[str, str]) -> list[tuple[str, int]]:
        assert self.address is not None
        try:
            found = [kv.json() for kv in await registrations()]
        except EtcdUnavailable as exc:
            log.warning("RocketMQ gRPC front: the other nodes' addresses are unknown (%s): naming this node's only", exc)
            found = []
        return member_addresses(found, members, self.address)

    async def _complete(self, registrations: Callable[[], Awaitable[Iterable[Any]]], members: dict[str, str]) -> None:
        """Read the registrations again until every member's address is named."""
        while True:
            await asyncio.sleep(self.refresh_every)
            addresses = await self._addresses(registrations, members)
            self.front.service.name(addresses)
            if len(addresses) >= len(members):
                return

    async def stop(self) -> None:
        task, self._completing = self._completing, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        await self.front.stop()


def member_addresses(registrations: Iterable[Any], members: dict[str, str], own: str) -> list[tuple[str, int]]:
    """(host, port) of ``own`` and of every registration that names a member by its URL and has a gRPC address."""
    addresses = {own}
    for info in registrations:
        if isinstance(info, dict) and members.get(str(info.get("node_id"))) == info.get("url") and info.get("grpc"):
            addresses.add(str(info["grpc"]))
    return [(host, int(port)) for host, _, port in (a.rpartition(":") for a in sorted(addresses))]
