"""How a write lands: its consume-queue entries first, then its bytes in the commit log; a refusal undoes the entries.

The one step the store's two writers share: a send's write group (writer.py) and a leader's bytes on a follower
(replica_append.py). In this order a failure leaves nothing behind: entries pointing past the log are cut here (and
by recovery after a crash), whereas a log record without its entry would make the next message reuse its queue offset.
Called under the store's write lock.
"""

from __future__ import annotations

from collections.abc import Callable

from .consume_queue import ConsumeQueue
from .consume_queues import ConsumeQueues, QueueKey
from .write_gate import WriteGate

# A write's consume-queue entries, by queue: [its next queue offset], [(log offset, size, tag hash)].
QueueBatches = dict[QueueKey, tuple[list[int], list[tuple[int, int, int]]]]


class QueueAppends:
    def __init__(self, queues: ConsumeQueues, gate: WriteGate) -> None:
        self._queues = queues
        self._gate = gate

    def writable(self, key: QueueKey) -> ConsumeQueue:
        """The queue a write appends to; a disk that refuses to open it is StoreNotWritable."""
        try:
            return self._queues.open(*key)
        except OSError as exc:
            raise self._gate.refused(f"cannot open consume queue {key[0]}/{key[1]}", exc) from exc

    def batch(self, batches: QueueBatches, key: QueueKey) -> tuple[list[int], list[tuple[int, int, int]]]:
        """``key``'s batch in ``batches``, begun at its queue's next offset if it has none yet."""
        batch = batches.get(key)
        if batch is None:
            batch = batches[key] = ([self.writable(key).max_offset], [])
        return batch

    def append_then(self, batches: QueueBatches, write_log: Callable[[], object]) -> None:
        """Append every batch's entries, then ``write_log``; an OSError undoes the entries (StoreNotWritable).

        An undo the disk refuses too leaves entries past the log: the store turns read-only until a restart, whose
        recovery cuts them.
        """
        done: list[tuple[ConsumeQueue, int]] = []
        try:
            for key, (_, entries) in batches.items():
                cq = self._queues.open(*key)
                done.append((cq, cq.max_offset))
                cq.append_many(entries)
            write_log()
        except OSError as exc:
            for cq, before in reversed(done):
                try:
                    cq.truncate_to(before)
                except OSError as undo:
                    self._gate.stop_writes(f"cannot undo consume-queue entries of a failed write ({undo}); restart the broker")
            raise self._gate.refused("cannot append messages", exc) from exc
