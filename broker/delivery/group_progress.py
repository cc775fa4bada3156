"""Every consumer group's progress on its topics, as the delivery service, held acks and group views share it.

A group's progress on a topic (``GroupTopic``: one ``QueueProgress`` per queue) is opened on first use from the
group's committed offsets (or the queue's first offset), lives on the event loop's thread, and goes back to the
store only as committed offsets: a settle that moves a queue's contiguous committed offset commits it (the offsets
file is a checkpoint of them; the ``acks`` records in the log are what a restart replays).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable

from halfmq.broker.store.message_store import MessageStore
from halfmq.errors import TopicNotFound

from .queue_progress import GroupStates, GroupTopic, QueueProgress
from .receipt_handle import ReceiptHandle


class GroupProgress:
    def __init__(self, store: MessageStore, fifo_window: int, epoch: str, wake: Callable[[str], None]) -> None:
        self._store = store
        self._fifo_window = fifo_window
        self._epoch = epoch  # this runtime's: a handle of another holds nothing
        self._wake = wake  # long polls on a topic: a settle can ready a message group's next message
        self.states = GroupStates()

    def find(self, group: str, topic: str) -> GroupTopic | None:
        """The group's progress on ``topic`` if it has any (settling never creates a group: none means nothing is held)."""
        return self.states.get((group, topic))

    def open(self, group: str, topic: str) -> GroupTopic:
        """The group's progress on ``topic``, begun at its committed offsets, with a queue for each the topic has now."""
        state = self.states.get((group, topic))
        cfg = self._store.topic(topic)
        if cfg is None:
            raise TopicNotFound(f"topic {topic!r} does not exist")
        if state is None:
            state = GroupTopic([])
            self.states[(group, topic)] = state
        while len(state.queues) < cfg.queues:
            state.queues.append(QueueProgress(self._start(group, topic, len(state.queues)), fifo_window=self._fifo_window))
        return state

    def _start(self, group: str, topic: str, qid: int) -> int:
        """Where a queue's progress begins: the group's committed offset, else the queue's first retained message."""
        committed = self._store.offsets.get(group, topic, qid)
        return self._store.reads.queue_range(topic, qid)[0] if committed is None else committed

    def positions(self, group: str, topic: str) -> list[tuple[int, int, int]]:
        """Per queue of ``topic``: (queue id, the group's committed offset, its deliveries in flight), read without
        beginning the group (a dry run or a Kafka OffsetFetch naming any group must not grow the groups held)."""
        cfg = self._store.topic(topic)
        if cfg is None:
            raise TopicNotFound(f"topic {topic!r} does not exist")
        queues = (self.find(group, topic) or GroupTopic([])).queues
        return [(qid, queues[qid].committed, len(queues[qid].in_flight)) if qid < len(queues) else (qid, self._start(group, topic, qid), 0)
                for qid in range(cfg.queues)]

    def holding(self, state: GroupTopic | None, h: ReceiptHandle) -> QueueProgress | None:
        """The queue still holding the delivery ``h`` names, or None when it is expired (or settled)."""
        if state is None or h.epoch != self._epoch or not 0 <= h.queue_id < len(state.queues):
            return None
        progress = state.queues[h.queue_id]
        return progress if progress.holds(h.offset, h.nonce) else None

    def settle(self, group: str, topic: str, qid: int, progress: QueueProgress, offset: int) -> None:
        """``offset`` is done (acked, or moved to the DLQ): by a record in the log before its end now."""
        if progress.settle(offset, self._store.commit_log.end_offset):
            self._store.offsets.commit(group, topic, qid, progress.committed)
        state = self.states.get((group, topic))
        if state is not None:
            state.release_settled()  # the settled delivery's due entry goes now, not when its invisible time ends
        if progress.gate.ready:
            self._wake(topic)  # the next message of its group may be handed out: wake long polls

    def skip(self, group: str, topic: str, qid: int, progress: QueueProgress) -> None:
        """Pass over the queue's next offset without delivering it (its record is damaged), as if acked."""
        if progress.skip():
            self._store.offsets.commit(group, topic, qid, progress.committed)

    def continue_from(self, group: str, topic: str, qid: int, progress: QueueProgress, offset: int) -> int:
        """The queue's next entry is at ``offset``, past the group's cursor (retention deleted the ones between): the
        group continues there and commits it; return how many it skipped."""
        skipped = progress.continue_from(offset)
        if skipped:
            self._store.offsets.commit(group, topic, qid, progress.committed)
        return skipped

    def reset(self, group: str, topic: str, qid: int, offset: int) -> None:
        """Move the queue's committed offset to ``offset`` (an operator's reset, or its record read back): what was held
        or settled past the old one is forgotten, so the queue is delivered from ``offset`` again. Nonces go on from the
        old progress, so a receipt handed out before the reset never names a delivery made after it."""
        state = self.open(group, topic)
        if not 0 <= qid < len(state.queues):
            return
        old = state.queues[qid]
        fresh = QueueProgress(offset, fifo_window=self._fifo_window)
        fresh._nonce = old._nonce
        state.queues[qid] = fresh
        state.due = [d for d in state.due if d[1] != qid]
        heapq.heapify(state.due)
        self._store.offsets.move(group, topic, qid, offset)
        self._wake(topic)

    def forget(self, group: str) -> None:
        """Forget ``group``: its progress on every topic and its committed offsets (an operator deleted it; a receive
        after this begins it again at each queue's first offset, its held receipts answer EXPIRED)."""
        self.states.drop_group(group)
        self._store.offsets.drop_group(group)

    def forget_topic(self, topic: str) -> None:
        """Forget every group's progress and committed offsets on ``topic`` (an operator deleted it; receipts held for
        it answer EXPIRED)."""
        self.states.drop_topic(topic)
        self._store.offsets.drop_topic(topic)

    def restore_acked(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        """At start-up: an ack read back from the log (an ``acks`` record, or a committed producer transaction's), which
        the offsets file may not hold yet (it is a checkpoint, written about once a second, and a follower's is older)."""
        try:
            state = self.open(group, topic)
        except TopicNotFound:
            return
        if queue_id < len(state.queues):
            self.settle(group, topic, queue_id, state.queues[queue_id], offset)

    def settled(self) -> list[tuple[str, str, int, int, tuple[int, ...]]]:
        """Per queue: its committed offset and the offsets settled past the gap above it (store.state_snapshot)."""
        return [(g, t, qid, p.committed, tuple(sorted(p.acked)))
                for (g, t), state in self.states.items() for qid, p in enumerate(state.queues)]
