"""Producers connected over a gRPC telemetry stream, by producer group: the check-back's second transport.

RocketMQ 5 checks a transaction back by pushing ``RecoverOrphanedTransactionCommand``
on a telemetry stream of the producer; the client's ``TransactionChecker`` answers
with ``EndTransaction(source=SOURCE_SERVER_CHECK)``. A gRPC producer's group is the
topic it publishes (docs/decisions/029-rocketmq-5-front.md), so a session is filed
under every topic its settings name.

What the broker says on a stream (settings replies, checks) waits in the
session's ``Outbox`` until the stream writes it, and gRPC writes only as fast
as the client reads. The outbox is bounded: a command that does not fit means
the client does not keep up (or never reads), so the session is dropped (no
more checks go to it) and the stream ends with RESOURCE_EXHAUSTED, instead of
the broker's memory growing with every unread reply (issue 30: +187 MiB for
20,000 settings commands on one stream).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections import deque
from dataclasses import dataclass, field

from rocketmq.grpc_protocol import definition_pb2 as pb
from rocketmq.grpc_protocol import service_pb2 as spb

log = logging.getLogger(__name__)

OUTBOX_COMMANDS = 1024
OUTBOX_BYTES = 16 * 1024 * 1024


class Outbox:
    """Commands waiting to be written on one stream: at most ``max_commands`` and ``max_bytes`` (serialized).

    A command that would pass a bound is refused, and the outbox overflows: what it held is dropped and
    ``get`` answers None (the end of the stream) at once. One command always fits an empty outbox,
    however large. ``finish`` is the graceful end: what is queued is still written, then None.
    """

    def __init__(self, max_commands: int = OUTBOX_COMMANDS, max_bytes: int = OUTBOX_BYTES) -> None:
        self.max_commands = max_commands
        self.max_bytes = max_bytes
        self.overflowed = False
        self._closed = False
        self._queue: deque[tuple[spb.TelemetryCommand, int]] = deque()
        self._bytes = 0
        self._wakeup = asyncio.Event()

    def __len__(self) -> int:
        return len(self._queue)

    @property
    def bytes(self) -> int:
        return self._bytes

    def put(self, command: spb.TelemetryCommand) -> bool:
        """Queue ``command``; False when the outbox is closed or overflows now (nothing is queued then)."""
        if self._closed:
            return False
        size = command.ByteSize()
        if len(self._queue) >= self.max_commands or (self._queue and self._bytes + size > self.max_bytes):
            self.overflowed = self._closed = True
            self._queue.clear()
            self._bytes = 0
            self._wakeup.set()
            return False
        self._queue.append((command, size))
        self._bytes += size
        self._wakeup.set()
        return True

    def finish(self) -> None:
        """Nothing more will be put: ``get`` answers what is queued, then None."""
        self._closed = True
        self._wakeup.set()

    def get_nowait(self) -> spb.TelemetryCommand | None:
        if not self._queue:
            return None
        command, size = self._queue.popleft()
        self._bytes -= size
        return command

    async def get(self) -> spb.TelemetryCommand | None:
        """The next command to write; None once the outbox is finished and empty, or has overflowed."""
        while not self._queue:
            if self._closed:
                return None
            self._wakeup.clear()
            await self._wakeup.wait()
        return self.get_nowait()


@dataclass(eq=False)
class Session:
    client_id: str
    outbox: Outbox = field(default_factory=Outbox)
    groups: set[str] = field(default_factory=set)


class TelemetrySessions:
    def __init__(self, outbox_commands: int = OUTBOX_COMMANDS, outbox_bytes: int = OUTBOX_BYTES) -> None:
        self._by_group: dict[str, list[Session]] = {}
        self._turn = itertools.count()
        self._outbox = (outbox_commands, outbox_bytes)
        self.pushed = 0
        self.overflowed = 0  # streams ended because their client did not read what the broker sent

    def open(self, client_id: str) -> Session:
        return Session(client_id, Outbox(*self._outbox))

    def send(self, session: Session, command: spb.TelemetryCommand) -> bool:
        """Queue ``command`` on ``session``; when it does not fit, the session is dropped (its stream then ends)."""
        already = session.outbox.overflowed
        if session.outbox.put(command):
            return True
        if session.outbox.overflowed and not already:
            self.overflowed += 1
            log.warning("telemetry stream of client %r ended: %d commands or %d bytes unread (its client does not read "
                        "its replies)", session.client_id, session.outbox.max_commands, session.outbox.max_bytes)
        self.close(session)
        return False

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
        if not self.send(session, command):
            return False
        self.pushed += 1
        return True
