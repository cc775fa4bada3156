"""An order checker for FIFO message groups: a history of what producers and consumers saw, and a pure check.

Invariant O (docs/history/message-types-plan.md): within one consumer group, a message of message group *g* is handed out
only when every earlier message of *g* is settled (its ack answered, or moved to the DLQ). The history holds, in real
time order, events ``(consumer group, message group, seq, kind)``; seq is the message's place in its group's send
order. ``check`` counts:

- *overtaken*: a delivery of a message while an earlier one of its group (sent) is not settled in that consumer
  group, which breaks O. A consumer records ``ACK_SENT`` before it sends an ack (the broker settles before it
  answers, and another consumer's receive may be answered first), then ``ACKED`` on an OK answer. An ack sent whose
  answer was lost or EXPIRED counts as settled until the message is delivered again: then it was not, and every
  later message of its group delivered meanwhile overtook it;
- *out of order*: settles (first acks, DLQ moves) of a group not in seq order;
- *lost*: an acknowledged send never delivered to a consumer group;
- *duplicate after ack*: a delivery of a message whose ack was answered OK before;
- *unsettled*: a message sent and never settled (the consumers gave up before the end).

No I/O: the test around it does the sending and receiving. Nacks, expired acks and handed-back deliveries change
nothing a consumer group promised, so they need not be recorded (``NACKED`` is accepted and ignored).
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum

EXAMPLES = 5  # examples kept per anomaly


class Kind(str, Enum):
    SENT = "sent"  # an acknowledged send (no consumer group)
    DELIVERED = "delivered"
    ACKED = "acked"  # the ack answered OK
    ACK_SENT = "ack_sent"  # an ack about to be sent: it may settle the message (ACKED follows if answered OK)
    NACKED = "nacked"
    DEAD_LETTERED = "dead_lettered"


@dataclass(frozen=True)
class Event:
    consumer_group: str  # "" for a send
    message_group: str
    seq: int
    kind: Kind


class History:
    """Events in the order they were recorded; safe to record from several threads."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self._lock = threading.Lock()

    def record(self, consumer_group: str, message_group: str, seq: int, kind: Kind) -> None:
        with self._lock:
            self.events.append(Event(consumer_group, message_group, seq, kind))

    def sent(self, message_group: str, seq: int) -> None:
        self.record("", message_group, seq, Kind.SENT)


@dataclass
class Verdict:
    overtaken: list[str] = field(default_factory=list)
    out_of_order: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)
    duplicate_after_ack: list[str] = field(default_factory=list)
    unsettled: list[str] = field(default_factory=list)
    sent: int = 0
    deliveries: int = 0

    @property
    def ok(self) -> bool:
        return not (self.overtaken or self.out_of_order or self.lost or self.duplicate_after_ack or self.unsettled)

    def counts(self) -> dict[str, int]:
        return {"overtaken": len(self.overtaken), "out_of_order": len(self.out_of_order), "lost": len(self.lost),
                "duplicate_after_ack": len(self.duplicate_after_ack), "unsettled": len(self.unsettled)}

    def summary(self) -> str:
        examples = {name: sample[:EXAMPLES] for name, sample in (
            ("overtaken", self.overtaken), ("out_of_order", self.out_of_order), ("lost", self.lost),
            ("duplicate_after_ack", self.duplicate_after_ack), ("unsettled", self.unsettled)) if sample}
        line = f"{self.counts()} ({self.sent} sent, {self.deliveries} deliveries)"
        return f"{line}; examples {examples}" if examples else line


@dataclass
class _GroupOrder:
    """One message group as one consumer group saw it."""

    sent: set[int]
    delivered: set[int] = field(default_factory=set)
    settled: dict[int, Kind] = field(default_factory=dict)  # seq -> ACKED, ACK_SENT or DEAD_LETTERED
    settle_order: list[int] = field(default_factory=list)
    since_sent: dict[int, list[int]] = field(default_factory=dict)  # seq whose ack was sent -> later seqs delivered since

    def first_unsettled(self) -> int | None:
        return min((seq for seq in self.sent if seq not in self.settled), default=None)


def check(history: History | Iterable[Event], consumer_groups: Iterable[str] = ()) -> Verdict:
    """The verdict on ``history``; ``consumer_groups`` names groups that must have consumed even if they never did."""
    events = list(history.events if isinstance(history, History) else history)
    sent: dict[str, set[int]] = defaultdict(set)
    for e in events:
        if e.kind is Kind.SENT:
            sent[e.message_group].add(e.seq)
    names = set(consumer_groups) | {e.consumer_group for e in events if e.kind is not Kind.SENT}
    orders = {(cg, g): _GroupOrder(set(seqs)) for cg in names for g, seqs in sent.items()}
    verdict = Verdict(sent=sum(len(s) for s in sent.values()))
    for e in events:
        if e.kind not in (Kind.SENT, Kind.NACKED):
            _replay(orders.setdefault((e.consumer_group, e.message_group), _GroupOrder(set())), e, verdict)
    for (cg, g), order in sorted(orders.items()):
        verdict.lost += [f"{cg}/{g}#{seq}" for seq in sorted(order.sent - order.delivered)]
        verdict.unsettled += [f"{cg}/{g}#{seq}" for seq in sorted(order.sent & order.delivered - order.settled.keys())]
        highest = -1
        for seq in order.settle_order:
            if seq < highest:
                verdict.out_of_order.append(f"{cg}/{g}#{seq} settled after #{highest}")
            highest = max(highest, seq)
    return verdict


def _replay(order: _GroupOrder, e: Event, verdict: Verdict) -> None:
    if e.kind is Kind.DELIVERED:
        verdict.deliveries += 1
        _delivered(order, e.seq, f"{e.consumer_group}/{e.message_group}#{e.seq}", verdict)
    elif order.settled.get(e.seq) not in (Kind.ACKED, Kind.DEAD_LETTERED):
        if e.kind is Kind.ACK_SENT:
            order.since_sent[e.seq] = []
        if e.seq not in order.settled:
            order.settle_order.append(e.seq)
        order.settled[e.seq] = e.kind


def _delivered(order: _GroupOrder, seq: int, where: str, verdict: Verdict) -> None:
    state = order.settled.get(seq)
    if state is Kind.ACKED:
        verdict.duplicate_after_ack.append(where)
    elif state is Kind.ACK_SENT:  # delivered again: that ack did not settle it, and what came meanwhile overtook it
        del order.settled[seq]
        order.settle_order.remove(seq)
        verdict.overtaken += [f"{where.rsplit('#', 1)[0]}#{later} before #{seq}" for later in order.since_sent.pop(seq)]
    order.delivered.add(seq)
    first = order.first_unsettled()
    if first is not None and first < seq and state is not Kind.ACKED:
        verdict.overtaken.append(f"{where} while #{first} was not settled")
    for earlier, since in order.since_sent.items():
        if earlier < seq and order.settled.get(earlier) is Kind.ACK_SENT:
            since.append(seq)
