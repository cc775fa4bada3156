"""A queue checker of Jepsen's kind: a history of what clients did, and a pure check of what the queue kept.

The history records each send attempted (by which client, which value), acknowledged (where it was stored),
failed or of unknown outcome, each value a consumer received, and the final read of the whole topic after
the faults healed. ``check`` then counts:

- *lost*: acknowledged, and not in the final read;
- *unexpected*: read (received or in the final read), and never attempted;
- *duplicated*: stored more than once in the final read (deliveries may repeat, at least once: only stored
  copies count);
- *redelivered after ack*: received by a receive asked for after a consumer's ack of that value was answered OK
  (the group was told it is done; counted with duplicated, and printed on its own);
- *divergent*: nodes whose logs differ after the heal, when each node's log is given (any sequence: values
  read from it, or its commit-log bytes). Logs differ when one is not equal to another.

No I/O: the test around it does the reading. Values are unique strings chosen by the writers.
"""

from __future__ import annotations

import collections
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .history import Acknowledged, Attempted, ConsumerAcked, Failed, History, ReadBack, Received

__all__ = ["Verdict", "check", "divergences", "History"]

EXAMPLES = 5  # examples kept per anomaly


@dataclass
class Verdict:
    attempted: int = 0
    acknowledged: int = 0
    failed: int = 0
    stored: int = 0  # distinct values in the final read
    lost: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    duplicated: dict[str, int] = field(default_factory=dict)  # value -> stored copies (> 1)
    redelivered: list[str] = field(default_factory=list)  # delivered after its consumer ack was answered OK
    received: int = 0  # distinct values delivered to consumers
    consumer_acked: int = 0
    divergent: list[str] = field(default_factory=list)  # "n2 differs from n1 at 1234 (lengths 5000, 4800)"
    nodes_compared: int = 0

    @property
    def ok(self) -> bool:
        return not (self.lost or self.unexpected or self.duplicated or self.redelivered or self.divergent)

    def counts(self) -> str:
        divergent = f"{len(self.divergent)}" if self.nodes_compared else "not measured"
        return (f"lost {len(self.lost)}, unexpected {len(self.unexpected)}, "
                f"duplicated {len(self.duplicated) + len(self.redelivered)}, divergent {divergent}")

    def summary(self) -> str:
        examples = {name: sample for name, sample in (
            ("lost", sorted(self.lost)[:EXAMPLES]), ("unexpected", sorted(self.unexpected)[:EXAMPLES]),
            ("duplicated", sorted(self.duplicated.items())[:EXAMPLES]), ("redelivered after ack", sorted(self.redelivered)[:EXAMPLES]),
            ("divergent", self.divergent[:EXAMPLES])) if sample}
        line = (f"{self.counts()} ({self.attempted} attempted, {self.acknowledged} acknowledged, {self.failed} failed or "
                f"unknown, {self.stored} stored; {self.received} received, {self.consumer_acked} consumer-acked, "
                f"{len(self.redelivered)} redelivered after ack)")
        return f"{line}; examples {examples}" if examples else line


def check(history: History, final_reads_by_node: Mapping[str, Sequence[Any]] | None = None) -> Verdict:
    attempted = {op.value for op in history.of(Attempted)}
    acknowledged = {op.value for op in history.of(Acknowledged)}
    copies = collections.Counter(op.value for op in history.of(ReadBack))
    received = {op.value for op in history.of(Received)}
    verdict = Verdict(attempted=len(attempted), acknowledged=len(acknowledged),
                      failed=len({op.value for op in history.of(Failed)} - acknowledged), stored=len(copies))
    verdict.lost = sorted(acknowledged - copies.keys())
    verdict.unexpected = sorted((copies.keys() | received) - attempted)
    verdict.duplicated = {value: n for value, n in copies.items() if n > 1}
    verdict.received, verdict.consumer_acked = len(received), len({op.value for op in history.of(ConsumerAcked)})
    verdict.redelivered = redelivered_after_ack(history)
    if final_reads_by_node:
        verdict.nodes_compared = len(final_reads_by_node)
        verdict.divergent = divergences(final_reads_by_node)
    return verdict


def redelivered_after_ack(history: History) -> list[str]:
    """Values received by a receive asked for after an OK answer to a consumer's ack of them."""
    first_ack: dict[str, int] = {}
    for position, op in history.positions(ConsumerAcked):
        first_ack.setdefault(op.value, position)
    return sorted({op.value for op in history.of(Received) if op.value in first_ack and op.asked_at > first_ack[op.value]})


def divergences(logs: Mapping[str, Sequence[Any]]) -> list[str]:
    """Each node whose log is not the first node's, with where they part."""
    (first, reference), *others = logs.items()
    found = []
    for node, log in others:
        if log == reference:
            continue
        at = next((i for i, (a, b) in enumerate(zip(reference, log, strict=False)) if a != b), min(len(reference), len(log)))
        found.append(f"{node} differs from {first} at {at} (lengths {len(reference)}, {len(log)})")
    return found
