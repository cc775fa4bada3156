"""The history a queue checker of Jepsen's kind reads: what clients attempted, were told, and received.

Producers record each send *attempted* (by which client, which value), *acknowledged* (where it was stored) or
*failed* (an error or an unknown outcome); consumers record each value *received* (with the history's position
when the receive was asked for) and each *consumer-acked* one (the ack answered OK); the test records the final
*read back* of the whole topic after the faults healed. ``tests/support/queue_checker.py`` checks it.

Operations keep the order they were recorded in; ``to_json``/``from_json`` carry a history out of a run in
another process (the checker's run inside its own network namespace).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Attempted:
    client: str
    value: str


@dataclass(frozen=True)
class Acknowledged:
    value: str
    where: str  # a message id, or "queue:offset"


@dataclass(frozen=True)
class Failed:
    """A send that failed, or whose outcome is unknown (a timeout): it may or may not be stored."""

    value: str
    reason: str


@dataclass(frozen=True)
class Received:
    """A delivery of ``value`` to ``consumer``, whose receive was asked for when the history held ``asked_at`` operations."""

    value: str
    consumer: str
    asked_at: int = 0


@dataclass(frozen=True)
class ConsumerAcked:
    """``consumer``'s ack of ``value`` was answered OK: its group must not be given ``value`` again."""

    value: str
    consumer: str


@dataclass(frozen=True)
class ReadBack:
    """One stored copy of ``value`` in the final read of the topic."""

    value: str


Operation = Attempted | Acknowledged | Failed | Received | ConsumerAcked | ReadBack
KINDS: dict[str, type[Operation]] = {kind.__name__: kind for kind in (Attempted, Acknowledged, Failed, Received, ConsumerAcked, ReadBack)}


class History:
    """Operations in the order they were recorded; safe to record from several threads."""

    def __init__(self, operations: Iterable[Operation] = ()) -> None:
        self.operations: list[Operation] = list(operations)
        self._lock = threading.Lock()

    def _add(self, operation: Operation) -> None:
        with self._lock:
            self.operations.append(operation)

    def now(self) -> int:
        """The position the next operation will take: a receive asked for now is after everything recorded so far."""
        with self._lock:
            return len(self.operations)

    def attempted(self, client: str, value: str) -> None:
        self._add(Attempted(client, value))

    def acknowledged(self, value: str, where: str) -> None:
        self._add(Acknowledged(value, where))

    def failed(self, value: str, reason: str) -> None:
        self._add(Failed(value, reason))

    def received(self, value: str, consumer: str, asked_at: int | None = None) -> None:
        """``asked_at``: ``now()`` before the receive was sent (default: now, when the delivery is recorded)."""
        with self._lock:
            self.operations.append(Received(value, consumer, len(self.operations) if asked_at is None else asked_at))

    def consumer_acked(self, value: str, consumer: str) -> None:
        self._add(ConsumerAcked(value, consumer))

    def read_back(self, values: Iterable[str]) -> None:
        """The final read: every stored copy, in the order read."""
        for value in values:
            self._add(ReadBack(value))

    def of(self, kind: type[Operation]) -> list[Any]:
        with self._lock:
            return [op for op in self.operations if isinstance(op, kind)]

    def positions(self, kind: type[Operation]) -> list[tuple[int, Any]]:
        """``(position, operation)`` for each operation of ``kind``."""
        with self._lock:
            return [(i, op) for i, op in enumerate(self.operations) if isinstance(op, kind)]

    def to_json(self) -> str:
        with self._lock:
            return json.dumps([[type(op).__name__, asdict(op)] for op in self.operations], separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> History:
        return cls(KINDS[kind](**fields) for kind, fields in json.loads(text))
