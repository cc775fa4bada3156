"""FIFO message groups in one queue of one consumer group: which message of a group may be handed out now.

Pure bookkeeping, no clock and no I/O. A group's *head* is the one message of it that may be in flight; every later
message of the group waits behind it, in queue order (a group always lands in one queue, so queue order is send
order). The head stays the head through nacks, invisibility timeouts and redeliveries (a retry is the same offset
delivered again), and only its settling (an ack answered, a DLQ move) makes the next one the head: ``ready``, served
before never-delivered offsets, once the record that settled its predecessor is below the visible bound (a broker
set's high watermark: a new leader has that ack too, so it cannot deliver the predecessor again after the successor).
Messages without a group never pass through here.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

MESSAGE_GROUP = "__SHARDINGKEY"  # the property a message's group is stored in (RocketMQ's name for it)


@dataclass(slots=True)
class FifoGate:
    busy: dict[str, int] = field(default_factory=dict)  # group -> its head's queue offset (in flight, or ready)
    waiting: dict[str, deque[int]] = field(default_factory=dict)  # group -> offsets behind its head, in queue order
    ready: deque[tuple[int, str, int]] = field(default_factory=deque)  # (offset, group, after): heads not handed out yet
    waiting_count: int = 0

    def admit(self, group: str, offset: int) -> bool:
        """A never-delivered message of ``group``: True when it becomes the group's head (hand it out now), False
        when it waits behind the head."""
        if group not in self.busy:
            self.busy[group] = offset
            return True
        self.waiting.setdefault(group, deque()).append(offset)
        self.waiting_count += 1
        return False

    def settle(self, group: str, offset: int, after: int = 0) -> bool:
        """``offset`` of ``group`` is settled (its ack or DLQ move in the log before commit-log offset ``after``); if it
        was the head, the next waiting message becomes the head and is ready. True when something became ready."""
        if self.busy.get(group) != offset:
            return False
        behind = self.waiting.get(group)
        if not behind:
            del self.busy[group]
            return False
        head = behind.popleft()
        self.waiting_count -= 1
        if not behind:
            del self.waiting[group]
        self.busy[group] = head
        self.ready.append((head, group, after))
        return True

    @property
    def groups_waiting(self) -> int:
        """Groups with a message waiting behind their head."""
        return len(self.waiting)
