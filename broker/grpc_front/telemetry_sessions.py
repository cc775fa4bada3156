"""Producers connected over a gRPC telemetry stream, by producer group: the check-back's second transport.

RocketMQ 5 checks a transaction back by pushing ``RecoverOrphanedTransactionCommand``
on a telemetry stream of the producer; the client's ``TransactionChecker`` answers
with ``EndTransaction(source=SOURCE_SERVER_CHECK)``. A gRPC producer's group is the
topic it publishes (docs/decisions.md, "RocketMQ 5 front"), so a session is filed
under every topic its settings name.
"""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass, field

from rocketmq.grpc_protocol import definition_pb2 as pb
from rocketmq.grpc_protocol import service_pb2 as spb


@dataclass(eq=False)
class Session:
    client_id: str
    outbox: asyncio.Queue[spb.TelemetryCommand | None] = field(default_factory=asyncio.Queue)
    groups: set[str] = field(default_factory=set)


class TelemetrySessions:
    def __init__(self) -> None:
        self._by_group: dict[str, list[Session]] = {}
        self._turn = itertools.count()
        self.pushed = 0

    def publishes(self, session: Session, groups: list[str]) -> None:
        for group in set(groups) - session.groups:
            self._by_group.setdefault(group, []).append(session)
        session.groups.update(groups)

    def close(self, session: Session) -> None:
        for group in session.groups:
            members = self._by_group.get(group, [])
            if session in members:
                members.remove(session)
            if not members:
                self._by_group.pop(group, None)
        session.groups.clear()

    def connected(self, group: str) -> bool:
        return bool(self._by_group.get(group))

    def push_check(self, group: str, transaction_id: str, message: pb.Message) -> bool:
        """Queue a check on one connected producer of ``group`` (round robin); False when none is connected."""
        members = self._by_group.get(group)
        if not members:
            return False
        session = members[next(self._turn) % len(members)]
        command = spb.TelemetryCommand(recover_orphaned_transaction_command=spb.RecoverOrphanedTransactionCommand(
            message=message, transaction_id=transaction_id))
        session.outbox.put_nowait(command)
        self.pushed += 1
        return True
