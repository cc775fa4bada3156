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

Bounded per stream is not bounded: 100 streams that never read took a broker
from 97 MB to 2.2 GB (issue 42). So every outbox also draws on one
``UnreadBudget``, the bytes waiting unread on all streams of the broker: a
command that would pass it ends the stream holding the most (the greediest
client pays, not the one that happened to be sent to next). And a principal,
and one client of it, may hold only so many streams open (``open``): past
that the new stream is refused with RESOURCE_EXHAUSTED before it holds
anything (docs/decisions/041-telemetry-stream-backpressure.md).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import sys
from collections import deque
from dataclasses import dataclass, field
from typing import NoReturn

from rocketmq.grpc_protocol import definition_pb2 as pb
from rocketmq.grpc_protocol import service_pb2 as spb

from halfmq.errors import TooManyTelemetryStreams

log = logging.getLogger(__name__)

OUTBOX_COMMANDS = 1024
OUTBOX_BYTES = 16 * 1024 * 1024
UNREAD_BYTES = 64 * 1024 * 1024  # on all streams of the broker
STREAMS_PER_PRINCIPAL = 128
STREAMS_PER_CLIENT = 8  # an Apache client keeps one per endpoints; a reconnect may overlap the stream it replaces


@dataclass
class UnreadBudget:
    """Bytes (serialized) queued unread on every telemetry stream of the broker, and how many may be."""

    limit: int = sys.maxsize
    held: int = 0


class Outbox:
    """Commands waiting to be written on one stream: at most ``max_commands`` and ``max_bytes``.

    Kept serialized, so the bytes counted (here and in the broker's ``budget``) are the bytes held: a
    decoded settings reply took about 2.7 times its size (7.5 kB, 20 kB). A command that would pass a bound is refused,
    and the outbox overflows: what it held is dropped and ``get`` answers None (the end of the stream) at
    once. One command always fits an empty outbox, however large. ``finish`` is the graceful end: what is
    queued is still written, then None.
    """

    def __init__(self, max_commands: int = OUTBOX_COMMANDS, max_bytes: int = OUTBOX_BYTES, budget: UnreadBudget | None = None) -> None:
        self.max_commands = max_commands
        self.max_bytes = max_bytes
        self.budget = budget or UnreadBudget()
        self.overflowed = False
        self.why = ""  # once overflowed: which bound it passed, as the stream's end tells its client
        self._closed = False
        self._queue: deque[bytes] = deque()
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
            self.overflow(f"the telemetry stream's outbox is full ({self.max_commands} commands or {self.max_bytes} bytes unread)")
            return False
        self._queue.append(command.SerializeToString())
        self._bytes += size
        self.budget.held += size
        self._wakeup.set()
        return True

    def overflow(self, why: str) -> None:
        """End the stream now because ``why``: drop what is queued; ``get`` answers None."""
        if not self.overflowed:
            self.overflowed, self.why = True, why
        self.discard()

    def discard(self) -> None:
        """Drop what is queued (its bytes go back to the budget) and take nothing more."""
        self._closed = True
        self._queue.clear()
        self.budget.held -= self._bytes
        self._bytes = 0
        self._wakeup.set()

    def finish(self) -> None:
        """Nothing more will be put: ``get`` answers what is queued, then None."""
        self._closed = True
        self._wakeup.set()

    def get_nowait(self) -> spb.TelemetryCommand | None:
        if not self._queue:
            return None
        data = self._queue.popleft()
        self._bytes -= len(data)
        self.budget.held -= len(data)
        return spb.TelemetryCommand.FromString(data)

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
    principal: str = ""


@dataclass(frozen=True)
class StreamCaps:
    """Telemetry streams one principal, and one client id of it, may hold open at once."""

    per_principal: int = STREAMS_PER_PRINCIPAL
    per_client: int = STREAMS_PER_CLIENT


class TelemetrySessions:
    def __init__(self, outbox_commands: int = OUTBOX_COMMANDS, outbox_bytes: int = OUTBOX_BYTES, unread_bytes: int = UNREAD_BYTES,
                 caps: StreamCaps | None = None) -> None:
        self._by_group: dict[str, list[Session]] = {}
        self._turn = itertools.count()
        self._outbox = (outbox_commands, outbox_bytes)
        self.budget = UnreadBudget(unread_bytes)
        self.caps = caps or StreamCaps()
        self._open: set[Session] = set()
        self._streams: dict[str, int] = {}  # principal -> streams open
        self._client_streams: dict[tuple[str, str], int] = {}  # (principal, client id) -> streams open
        self.pushed = 0
        self.overflowed = 0  # streams ended because their client did not read what the broker sent
        self.refused = 0  # streams refused at open: their principal or client had as many open as it may

    def open(self, client_id: str, principal: str = "") -> Session:
        """A stream of ``principal``'s client ``client_id``; TooManyTelemetryStreams past either's cap (nothing is held)."""
        client = (principal, client_id)
        held, of_client = self._streams.get(principal, 0), self._client_streams.get(client, 0)
        if of_client >= self.caps.per_client:
            self._refuse(f"client {client_id!r} of principal {principal!r}", self.caps.per_client)
        if held >= self.caps.per_principal:
            self._refuse(f"principal {principal!r}", self.caps.per_principal)
        session = Session(client_id, Outbox(*self._outbox, budget=self.budget), principal=principal)
        self._open.add(session)
        self._streams[principal] = held + 1
        self._client_streams[client] = of_client + 1
        return session

    def _refuse(self, whose: str, limit: int) -> NoReturn:
        self.refused += 1
        raise TooManyTelemetryStreams(f"{whose} already has {limit} telemetry streams open, as many as it may: close one "
                                      "(a client needs one per broker)", limit=limit)

    def streams(self, principal: str) -> int:
        """How many telemetry streams ``principal`` holds open."""
        return self._streams.get(principal, 0)

    def send(self, session: Session, command: spb.TelemetryCommand) -> bool:
        """Queue ``command`` on ``session``; when it does not fit, the session is dropped (its stream then ends).

        Past the broker's budget of unread bytes, the stream holding the most is dropped first: another one,
        until the command fits, or this one if it holds the most.
        """
        already = session.outbox.overflowed
        if self._room(session, command.ByteSize()) and session.outbox.put(command):
            return True
        if session.outbox.overflowed and not already:
            self._overflowed(session)
        self._leave(session)
        return False

    def _room(self, session: Session, size: int) -> bool:
        """Whether ``size`` more bytes fit the budget once greedier streams are dropped; False: ``session`` is the greediest."""
        while self.budget.held + size > self.budget.limit:
            greediest = max(self._open, key=lambda s: s.outbox.bytes, default=session)
            if greediest.outbox.bytes == 0:
                return True  # nothing is queued anywhere: one command always fits
            if greediest.outbox.bytes <= session.outbox.bytes:
                greediest = session
            greediest.outbox.overflow(f"the broker's telemetry streams hold {self.budget.held} bytes unread (at most "
                                      f"{self.budget.limit}) and this one held the most")
            if greediest is session:
                return False
            self._overflowed(greediest)
            self._leave(greediest)
        return True

    def _overflowed(self, session: Session) -> None:
        self.overflowed += 1
        log.warning("telemetry stream of client %r ended: %s (its client does not read its replies)", session.client_id,
                    session.outbox.why)

    def publishes(self, session: Session, groups: list[str]) -> None:
        for group in set(groups) - session.groups:
            self._by_group.setdefault(group, []).append(session)
        session.groups.update(groups)

    def close(self, session: Session) -> None:
        """The stream ended: it leaves its groups, and no longer counts towards its principal's streams."""
        self._leave(session)
        if session not in self._open:
            return
        self._open.discard(session)
        session.outbox.discard()  # what it held goes back to the budget
        self._streams[session.principal] -= 1
        if not self._streams[session.principal]:
            del self._streams[session.principal]
        client = (session.principal, session.client_id)
        self._client_streams[client] -= 1
        if not self._client_streams[client]:
            del self._client_streams[client]

    def _leave(self, session: Session) -> None:
        """No more checks go to ``session`` (its stream may still be ending)."""
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
