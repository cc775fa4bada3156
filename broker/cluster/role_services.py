"""What a node serves with in its role, as the node asks for it: the composition root answers (broker/runtime.py).

The node decides when it leads and when it follows; what serving in a role means (the runtime built again over
the store, the check-backs and timers started, the RocketMQ front on while it leads) is the root's, so this
package imports no front and no runtime. A promotion keeps the store open and builds the services above it from
what it appended; a step-down reopens the store from the data dir (no in-memory leader state stays) and serves
only replication and the reads a follower answers.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from halfmq.broker.store.message_store import MessageStore

if TYPE_CHECKING:  # a name only: the etcd client (and httpx) load when a set's node starts, not in a single broker
    from .etcd import KeyValue

Durable = Callable[[int], Awaitable[None]]


@dataclass(frozen=True)
class Leadership:
    """What a new leader hands the services it leads with."""

    durable: Callable[[Durable], Durable]  # the runtime's "durable": the local fsync, then the replicas as the ack mode says
    still_leading: Callable[[], None]  # raises NotLeader once this node may not write: checked as deliveries are handed out
    opened: Callable[[MessageStore], None]  # the store the services were built over, before they start or anyone reads
    registrations: Callable[[], Awaitable[Iterable[KeyValue]]]  # every node's registration in etcd (the fronts name them)


class RoleServices(Protocol):
    @property
    def store(self) -> MessageStore:
        """The store of the moment (a step-down opens another)."""
        ...

    def registration(self, node_id: str, url: str) -> str:
        """This node's value under ``nodes/`` in etcd: its id, its URL and where its other fronts listen."""
        ...

    async def lead(self, leadership: Leadership) -> None:
        """Serve as the leader over the store kept open: build the services again, start them and the leader's fronts."""
        ...

    async def follow(self) -> None:
        """Stop what leading started, reopen the store from disk, serve as a follower."""
        ...

    async def begin_at(self, log_start: int, snapshot: Path, also: Mapping[str, bytes]) -> None:
        """A follower behind its leader's log start: close the store, have the data dir begin empty at ``log_start``
        with ``snapshot`` (the leader's state snapshot, received whole) as its own and ``also``'s files (by name: the
        term history), in one step a crash cannot split (store/log_start.begin_at), reopen it and serve as a follower."""
        ...
