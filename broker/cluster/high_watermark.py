"""A leader's visible bound, kept at its high watermark (decisions.high_watermark).

Consumers of a broker set read only what every in-sync node has on disk
(broker/store/visible_reads.py). The mark moves when a follower reports, when
the published in-sync set changes and when the leader's own fsync catches up.
A write no send waits for (a DLQ move) is fsynced on the leader only with the
next send's, so when the followers have more on disk than the leader this asks
the leader's disk for it rather than leave the mark behind. Followers learn the
mark from every run of their stream (a moved mark alone is pushed at once), so the one elected next starts where the last leader's consumers were.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

from halfmq.broker.store.message_store import MessageStore, StoreNotWritable

from .replica_tracker import ReplicaTracker


class HighWatermark:
    def __init__(self, tracker: ReplicaTracker, store: Callable[[], MessageStore], moved: Callable[[], None] = lambda: None) -> None:
        self._tracker = tracker
        self._store = store
        self._moved = moved  # the followers' streams push it at once, so they learn the mark without delay
        self._fsync_asked = 0
        self._led: MessageStore | None = None  # the store this node leads with (a follower's bound is its follower's)

    def lead(self, store: MessageStore) -> None:
        """A new term's store: show consumers what the mark covers and nothing more, before anyone reads."""
        store.visible.limit(self._tracker.high_watermark)
        self._fsync_asked = 0
        self._led = store
        self.advance()

    def advance(self) -> None:
        store = self._store()
        if store is not self._led:  # not leading (a role change opens another store): the follower moves its bound
            return
        replicated = self._tracker.acknowledged(store.commit_log.end_offset)
        durable = store.acknowledged_end
        if replicated > durable and replicated > self._fsync_asked:
            self._ask_fsync(store, replicated)
        before = store.visible.bound
        store.visible.advance(self._tracker.advance(durable))
        if store.visible.bound != before:
            self._moved()

    def _ask_fsync(self, store: MessageStore, offset: int) -> None:
        try:
            done = store.wait_flushed(offset)
        except StoreNotWritable:  # the store has said why; the mark waits for its disk
            return
        if done is None:
            return
        self._fsync_asked = offset
        loop = asyncio.get_running_loop()

        def fsynced(_: object) -> None:
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody reads any more
                loop.call_soon_threadsafe(self.advance)

        done.add_done_callback(fsynced)
