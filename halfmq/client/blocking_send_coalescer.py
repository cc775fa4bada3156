"""Concurrent blocking ``Producer.send`` calls (threads) to one topic share batch requests.

The threaded twin of ``send_coalescer``, with the same decisions (``take_count``,
``concerns_the_request``) and the same promise: each caller gets exactly the answer
its send alone would have got. No thread of its own: a send that finds fewer than
``max_requests`` requests of its topic in flight sends at once, taking every send
waiting then (a lone send is never delayed); the others wait, and when a request
ends the oldest waiting send's thread is woken to send the next batch. Members of a
refused batch whose error may concern one message are woken to send alone.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from halfmq.wire import MAX_BATCH, OutgoingMessage, SendResult

from .send_coalescer import BATCH_BYTES, MIN_SHARE, Limits, concerns_the_request, own_error

__all__ = ["BlockingSendCoalescer"]

MAX_REQUESTS_PER_TOPIC = 2  # threads usually number fewer than asyncio callers: coalesce sooner

SendBatch = Callable[[str, list[OutgoingMessage]], list[SendResult]]
SendOne = Callable[[str, OutgoingMessage], SendResult]

_WAIT, _LEAD, _ALONE, _DONE = "wait", "lead", "alone", "done"


@dataclass(slots=True)
class _Item:
    message: OutgoingMessage
    woken: threading.Event = field(default_factory=threading.Event)
    role: str = _WAIT
    result: SendResult | None = None
    error: BaseException | None = None


@dataclass(slots=True)
class _Topic:
    pending: list[_Item] = field(default_factory=list)
    in_flight: int = 0


class BlockingSendCoalescer:
    def __init__(self, send_batch: SendBatch, send_one: SendOne, *, max_requests: int = MAX_REQUESTS_PER_TOPIC,
                 max_messages: int = MAX_BATCH, max_bytes: int = BATCH_BYTES, min_share: int = MIN_SHARE) -> None:
        self._limits = Limits(max_requests, max_messages, max_bytes, min_share)
        self._send_batch = send_batch
        self._send_one = send_one
        self._lock = threading.Lock()
        self._topics: dict[str, _Topic] = {}

    def send(self, topic: str, message: OutgoingMessage) -> SendResult:
        item = _Item(message)
        with self._lock:
            state = self._topics.setdefault(topic, _Topic())
            state.pending.append(item)
            batch = self._take(state)
        while True:
            if batch:
                self._run(topic, state, batch)
                batch = None
            role = item.role  # set under the lock; a stale read only costs one more pass
            if role == _DONE:
                return self._outcome(item)
            if role == _ALONE:
                return self._send_one(topic, message)
            if role == _LEAD:  # woken to send the next request (ours may be in it)
                with self._lock:
                    if item.role == _LEAD:
                        item.role = _WAIT
                        batch = self._take(state)
                continue
            item.woken.wait()
            item.woken.clear()

    def _take(self, state: _Topic) -> list[_Item] | None:
        """Under the lock: the next request's sends, taken off the pending list, if a request may start."""
        pending = state.pending
        if state.in_flight >= self._limits.max_requests or not pending:
            return None
        count = self._limits.next_count([i.message for i in pending[: self._limits.max_messages * self._limits.max_requests]],
                                        state.in_flight)
        batch, state.pending = pending[:count], pending[count:]
        state.in_flight += 1
        return batch

    def _run(self, topic: str, state: _Topic, batch: list[_Item]) -> None:
        try:
            outcome = self._answer(topic, batch)
        finally:
            with self._lock:
                state.in_flight -= 1
                if state.pending and state.pending[0].role == _WAIT:
                    state.pending[0].role = _LEAD
                    state.pending[0].woken.set()
        with self._lock:
            for item, (role, result, error) in zip(batch, outcome, strict=True):
                item.role, item.result, item.error = role, result, error
                item.woken.set()

    def _answer(self, topic: str, batch: list[_Item]) -> list[tuple[str, SendResult | None, BaseException | None]]:
        """Each member's role, result and error once its request ended."""
        try:
            if len(batch) == 1:
                results = [self._send_one(topic, batch[0].message)]
            else:
                results = self._send_batch(topic, [i.message for i in batch])
            if len(results) != len(batch):
                raise RuntimeError(f"{len(results)} results for {len(batch)} messages")
        except BaseException as exc:  # noqa: BLE001 - every member is told, whatever ended the request
            if isinstance(exc, Exception) and len(batch) > 1 and not concerns_the_request(exc):
                return [(_ALONE, None, None)] * len(batch)
            return [(_DONE, None, own_error(exc)) for _ in batch]
        return [(_DONE, result, None) for result in results]

    @staticmethod
    def _outcome(item: _Item) -> SendResult:
        if item.error is not None:
            raise item.error
        assert item.result is not None
        return item.result
