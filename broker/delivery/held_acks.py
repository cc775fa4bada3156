"""Acks inside open producer transactions (DESIGN section 11): held invisible to their group until the transaction ends.

The producer-transaction coordinator (producer_transactions/coordinator.py) checks and holds a transaction's
receipts as it adds them, and settles them at commit or gives them back at abort. A held delivery's ``visible_at``
is ``HELD_BY_TRANSACTION``: no timeout redelivers it, and a plain ack, nack or dead-letter of it is refused or has no
effect while the transaction is open (the transaction's end decides it). Holds live in memory only: an open
transaction never survives a restart, and a committed one's acks come back from its commit record.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable

from halfmq.errors import ReceiptInOtherTransaction, ReceiptNotHeld

from .group_progress import GroupProgress
from .queue_progress import HELD_BY_TRANSACTION, GroupTopic
from .receipt_handle import ReceiptHandle


class HeldAcks:
    def __init__(self, progress: GroupProgress, clock: Callable[[], float], wake: Callable[[str], None],
                 on_settled: Callable[[ReceiptHandle], None]) -> None:
        self._progress = progress
        self._clock = clock
        self._wake = wake
        self._on_settled = on_settled  # counted as an ack (the delivery service's event counts)

    def check_held(self, receipts: list[ReceiptHandle]) -> None:
        """RECEIPT_EXPIRED (409) unless every receipt still names a delivery in flight; changes nothing."""
        for h in receipts:
            if self._progress.holding(self._progress.find(h.group, h.topic), h) is None:
                raise ReceiptNotHeld(f"receipt for {h.group}/{h.topic}/{h.queue_id}@{h.offset} is expired or settled",
                                     queue_id=h.queue_id, offset=h.offset)

    def hold(self, receipts: list[ReceiptHandle]) -> None:
        """Keep the deliveries invisible to their group until ``settle_held`` or ``release_held`` (a transaction's end)."""
        self.check_held(receipts)
        for h in receipts:
            self._progress.states[(h.group, h.topic)].queues[h.queue_id].postpone(h.offset, HELD_BY_TRANSACTION)

    def settle_held(self, receipts: list[ReceiptHandle]) -> None:
        """The transaction committed: its acks take effect."""
        for h in receipts:
            progress = self._progress.holding(self._progress.find(h.group, h.topic), h)
            if progress is not None:
                self._progress.settle(h.group, h.topic, h.queue_id, progress, h.offset)
                self._on_settled(h)

    def release_held(self, receipts: list[ReceiptHandle]) -> None:
        """The transaction aborted: the acked deliveries become deliverable again at once (the attempt counts)."""
        now = self._clock()
        for h in receipts:
            state = self._progress.find(h.group, h.topic)
            progress = self._progress.holding(state, h)
            if progress is not None and state is not None:
                item = progress.postpone(h.offset, now)
                heapq.heappush(state.due, (now, h.queue_id, h.offset, item.nonce))
                self._wake(h.topic)

    def is_held(self, state: GroupTopic | None, h: ReceiptHandle) -> bool:
        """Whether the delivery ``h`` names is acked in an open transaction (then only that transaction's end settles it)."""
        progress = self._progress.holding(state, h)
        return progress is not None and progress.in_flight[h.offset].visible_at == HELD_BY_TRANSACTION

    def refuse_if_held(self, state: GroupTopic | None, h: ReceiptHandle) -> None:
        """RECEIPT_IN_TRANSACTION when the delivery ``h`` names is acked in an open producer transaction."""
        if self.is_held(state, h):
            raise ReceiptInOtherTransaction(f"{h.group}/{h.topic}/{h.queue_id}@{h.offset} is acked in an open producer "
                                            "transaction: its commit settles it, its abort gives it back")
