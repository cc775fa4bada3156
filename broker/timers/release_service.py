"""The leader's release loop: sleep until the earliest timer is due, then write what is due to its topic.

Only I/O here; what is due is ``TimerIndex.due`` (pure). A release is ONE write group, the released messages
then a marker naming their timer offsets, so a timer is released exactly once in the log: a kill -9 before the
group is written releases nothing (it is released later, never early), and the index learns the release from
the marker, as every node and every recovery does.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from halfmq.broker.store.message_store import MessageStore, PutItem, PutResult
from halfmq.broker.store.topics import RELEASE_QUEUE, TIMER_OUT_MS, TIMER_QUEUE, TIMER_TOPIC

from .routing import released
from .timer_index import Timer, TimerIndex, encode_marker

log = logging.getLogger(__name__)

BATCH = 256
MAX_SLEEP = 1.0  # seconds: a clock step forward is noticed within this


class ReleaseService:
    def __init__(self, store: MessageStore, index: TimerIndex, durable: Callable[[int], Awaitable[None]], *,
                 clock: Callable[[], float] = time.time, batch: int = BATCH,
                 on_released: Callable[[float], None] = lambda lateness_seconds: None) -> None:
        self._store = store
        self._index = index
        self._durable = durable
        self._clock = clock
        self._batch = batch
        self._on_released = on_released
        self._wake: asyncio.Event | None = None

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)  # floored: a timer due in this millisecond is due, never one due in the next

    async def run_forever(self) -> None:
        loop = asyncio.get_running_loop()
        wake = self._wake = asyncio.Event()

        def wake_up() -> None:  # the index calls it from whichever thread appended the sooner timer
            loop.call_soon_threadsafe(wake.set)

        self._index.on_sooner = wake_up
        while True:
            due = self._index.due(self._now_ms(), self._batch)
            if due:
                try:
                    await self.release(due)
                except Exception:  # a refusing disk: nothing was released; the store logs it, the next pass retries
                    log.exception("releasing %d due timers failed", len(due))
                    await asyncio.sleep(MAX_SLEEP)
                continue
            wake.clear()
            earliest = self._index.next_due()
            wait = MAX_SLEEP if earliest is None else min(MAX_SLEEP, max(0.0, (earliest - self._now_ms()) / 1000))
            try:
                await asyncio.wait_for(wake.wait(), wait)
            except TimeoutError:
                pass

    async def release(self, due: list[Timer]) -> list[PutResult]:
        """Write ``due``'s messages and their marker as one group, then wait until it is durable."""
        group = self._group(due)
        while not self._store.fits(group) and len(due) > 1:  # large bodies: release fewer at a time
            due = due[:len(due) // 2]
            group = self._group(due)
        results, end = self._store.put(group)
        for result in results[:-1]:
            self._on_released(max(0.0, (result.store_timestamp - int(result.properties[TIMER_OUT_MS])) / 1000))
        await self._durable(end)
        return results[:-1]

    def _group(self, due: list[Timer]) -> list[PutItem]:
        items = []
        for _, offset in due:
            timer = self._store.reads.get(TIMER_TOPIC, TIMER_QUEUE, offset)
            if timer is None:  # damaged (reported by the read): marked released, or it would be retried forever
                log.error("timer %s/%d@%d is damaged on disk and cannot be delivered", TIMER_TOPIC, TIMER_QUEUE, offset)
                continue
            topic, queue_id, props = released(timer.topic, timer.queue_id, timer.properties)
            if timer.commit_log_offset < self._store.topics.deleted_at.get(topic, -1):  # its topic was deleted since
                log.info("timer %s/%d@%d is for topic %s, deleted since: released into nothing", TIMER_TOPIC, TIMER_QUEUE,
                         offset, topic)
                continue
            items.append(PutItem(topic, queue_id, timer.body, props, timer.born_timestamp, timer.binary, props.get("TAGS")))
        return [*items, PutItem(TIMER_TOPIC, RELEASE_QUEUE, encode_marker([offset for _, offset in due]))]
