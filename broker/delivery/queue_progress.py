"""Per (group, topic, queue) delivery bookkeeping: who holds what, and how far acks reach.

Pure data with an explicit clock value passed in, so every rule (invisibility,
contiguous commit, stale receipts) is testable without sleeping.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from .backoff import FIFO_WINDOW
from .fifo_gate import FifoGate

UNBOUNDED = 1 << 62
DUE_SLACK = 64  # stale entries the due heap may keep beyond twice its live ones before it is rebuilt (stale_due)
HELD_BY_TRANSACTION = float("inf")  # visible_at of a delivery acked in an open producer transaction: a nack cannot free it


@dataclass(slots=True)
class InFlight:
    offset: int
    nonce: int
    deliveries: int
    visible_at: float
    nacked: bool = False  # how its latest delivery ended: a nack (True) or, once due again, its invisible time ran out
    message_group: str | None = None  # FIFO: its group's head until settled (fifo_gate)
    first_at: float = 0.0  # when it was first handed out: how long it has held its queue (window_stall)


@dataclass
class QueueProgress:
    committed: int
    cursor: int = -1
    fifo_window: int = FIFO_WINDOW  # how far past committed the cursor may go while messages wait (room)
    in_flight: dict[int, InFlight] = field(default_factory=dict)
    acked: set[int] = field(default_factory=set)
    gate: FifoGate = field(default_factory=FifoGate)
    retention_skipped: int = 0  # offsets retention deleted before the group received them, since start (continue_from)
    _nonce: int = 0

    def __post_init__(self) -> None:
        if self.cursor < self.committed:
            self.cursor = self.committed

    def deliver_new(self, now: float, invisible: float) -> InFlight:
        """Hand out the next never-delivered offset."""
        offset = self.cursor
        self.cursor += 1
        return self._hand_out(offset, now, invisible, None)

    def deliver_next(self, now: float, invisible: float, group: str | None) -> InFlight | None:
        """``deliver_new`` for a message of ``group`` (None: no group); None when its group's head is not settled yet:
        the cursor passes it, it waits in the gate, and committed cannot pass it."""
        offset = self.cursor
        self.cursor += 1
        if group is not None and not self.gate.admit(group, offset):
            return None
        return self._hand_out(offset, now, invisible, group)

    def ready_head(self, bound: int | None) -> int | None:
        """The next group head whose predecessor settled (FIFO), once what settled it is within ``bound`` (the visible
        commit-log bound: a set's high watermark; None: everything written), else None."""
        if not self.gate.ready:
            return None
        offset, _, after = self.gate.ready[0]
        return offset if bound is None or after <= bound else None

    def deliver_ready(self, now: float, invisible: float) -> InFlight:
        """Hand out ``ready_head``'s message; the gate must have one ready."""
        offset, group, _ = self.gate.ready.popleft()
        return self._hand_out(offset, now, invisible, group)

    def _hand_out(self, offset: int, now: float, invisible: float, group: str | None) -> InFlight:
        self._nonce += 1
        item = InFlight(offset, self._nonce, 1, now + invisible, message_group=group, first_at=now)
        self.in_flight[offset] = item
        return item

    def room(self) -> int:
        """How many more offsets the cursor may pass: unbounded unless messages wait behind their groups' heads, then
        up to ``fifo_window`` past committed (the bound on what waits; past it one stuck group stalls its queue until it
        is acked or dead-lettered: ``window_stall``)."""
        if not self.gate.waiting_count:
            return UNBOUNDED
        return self.committed + self.fifo_window - self.cursor

    def window_stall(self, now: float, max_offset: int) -> float:
        """How long delivery of this queue has been stopped at its window by the unsettled message at committed: seconds
        since that message was first handed out, 0 while delivery is not stopped there.

        Stopped means messages wait behind their groups' heads, the cursor reached committed + ``fifo_window`` and more
        messages lie past it: none of them, of any group, is handed out until the message at committed is acked or
        dead-lettered (FIFO_WINDOW). A backlog of one busy group that drains keeps moving committed, so its age stays
        small; a head nobody settles holds it for hours (``halfmq_fifo_window_stalled_seconds``, its alert)."""
        if self.room() > 0 or max_offset <= self.cursor:
            return 0.0
        holder = self.in_flight.get(self.committed)
        return max(0.0, now - holder.first_at) if holder is not None else 0.0

    def pass_acked(self) -> bool:
        """Step over the next offset if it is already acked (restored from a committed producer transaction)."""
        if self.cursor < self.committed or (self.acked and self.cursor in self.acked):
            self.cursor += 1
            return True
        return False

    def continue_from(self, offset: int) -> int:
        """Continue at ``offset``, the queue's earliest retained one, when the cursor is below it (retention deleted
        what lay between, Kafka's ``earliest``): committed moves there too; return how many offsets were never delivered."""
        if offset <= self.cursor:
            return 0
        skipped = offset - self.cursor
        self.cursor = offset
        self.retention_skipped += skipped
        if self.committed < offset:
            self.committed = offset
            self.acked = {done for done in self.acked if done >= offset}
        return skipped

    def skip(self) -> bool:
        """Pass over the next offset without delivering it (its record is damaged); True when committed moved."""
        offset = self.cursor
        self.cursor += 1
        return self.settle(offset)

    def redeliver(self, offset: int, now: float, invisible: float) -> InFlight:
        item = self.in_flight[offset]
        self._nonce += 1
        item.nonce = self._nonce
        item.deliveries += 1
        item.visible_at = now + invisible
        item.nacked = False
        return item

    def holds(self, offset: int, nonce: int) -> bool:
        item = self.in_flight.get(offset)
        return item is not None and item.nonce == nonce

    def settle(self, offset: int, after: int = 0) -> bool:
        """Mark ``offset`` done, by a record in the log before ``after`` (the next message of its group, if any, becomes
        ready); True when committed moved."""
        item = self.in_flight.pop(offset, None)
        if item is not None and item.message_group is not None:
            self.gate.settle(item.message_group, offset, after)
        if offset < self.committed:
            return False
        self.acked.add(offset)
        moved = False
        while self.committed in self.acked:
            self.acked.discard(self.committed)
            self.committed += 1
            moved = True
        return moved

    def postpone(self, offset: int, visible_at: float) -> InFlight:
        item = self.in_flight[offset]
        item.visible_at = visible_at
        return item

    def lag(self, queue_id: int, max_offset: int, now: float) -> QueueLag:
        return QueueLag(queue_id, self.committed, max_offset, max_offset - self.committed, len(self.in_flight),
                        self.gate.groups_waiting, self.window_stall(now, max_offset), self.retention_skipped)


def stale_due(entries: int, live: int) -> bool:
    """Whether a due heap of ``entries`` holding ``live`` deliveries in flight is mostly settled or superseded entries.

    An ack, nack or redelivery leaves the entry it pushed behind (a heap cannot drop one from its middle); without a
    rebuild they stayed until their invisible time ran out, so consuming a million messages under a long invisible time
    held a million dead entries (RSS 72 -> 262 MiB). Rebuilding past twice the live ones plus ``DUE_SLACK`` keeps the
    heap within a constant factor of what is in flight, at an amortised constant cost per settle."""
    return entries > 2 * live + DUE_SLACK


@dataclass
class GroupTopic:
    """One group's progress on one topic: its queues, and the deliveries due to be visible again."""

    queues: list[QueueProgress]
    due: list[tuple[float, int, int, int]] = field(default_factory=list)  # (visible_at, queue, offset, nonce)
    rotation: int = 0

    def release_settled(self) -> None:
        """Rebuild ``due`` from the deliveries still in flight when it is mostly dead entries (``stale_due``): one entry
        per delivery, at its current invisible time and nonce (the only one ``_take_due`` would act on). A delivery held
        by an open producer transaction has none: no timeout redelivers it; its transaction's end pushes one."""
        if len(self.due) <= DUE_SLACK:
            return  # never stale (``stale_due``), whatever is in flight: not worth counting on every settle
        live = sum(len(queue.in_flight) for queue in self.queues)
        if not stale_due(len(self.due), live):
            return
        self.due = [(item.visible_at, qid, offset, item.nonce)
                    for qid, queue in enumerate(self.queues) for offset, item in queue.in_flight.items()
                    if item.visible_at != HELD_BY_TRANSACTION]
        heapq.heapify(self.due)


class GroupStates(dict[tuple[str, str], GroupTopic]):
    """Every (group, topic)'s progress, found by the pair and by the group (``by_group``): a view of one group reads
    only that group's, not every group's (that made a page of all groups quadratic in their number)."""

    def __init__(self) -> None:
        super().__init__()
        self.by_group: dict[str, dict[str, GroupTopic]] = {}

    def __setitem__(self, key: tuple[str, str], state: GroupTopic) -> None:
        super().__setitem__(key, state)
        self.by_group.setdefault(key[0], {})[key[1]] = state

    def drop_group(self, group: str) -> None:
        """Forget every topic's progress of ``group``."""
        for topic in self.by_group.pop(group, {}):
            super().pop((group, topic), None)

    def drop_topic(self, topic: str) -> None:
        """Forget every group's progress on ``topic`` (a group left with no topic is no longer held)."""
        for group, topics in list(self.by_group.items()):
            if topics.pop(topic, None) is not None:
                super().pop((group, topic), None)
            if not topics:
                del self.by_group[group]


@dataclass(frozen=True, slots=True)
class QueueLag:
    queue_id: int
    committed_offset: int
    max_offset: int
    lag: int
    in_flight: int
    fifo_groups_waiting: int = 0
    fifo_window_stalled_seconds: float = 0.0  # QueueProgress.window_stall
    retention_skipped: int = 0  # QueueProgress.retention_skipped
