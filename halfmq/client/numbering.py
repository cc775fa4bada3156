"""An idempotent producer's numbers (DESIGN section 11): its producer id and epoch, and the next sequence.

Every producer numbers its sends by default, as Kafka's enable.idempotence: the
producer id comes lazily with the first send, from ``POST /v1/producer-ids``
(or from ``init`` of ``idempotent_id`` when the caller wants a stable identity).
Many numbered sends are in flight at once; the broker keeps a window of
numbers (``idempotent_send_window``, 1024 by default) so they may arrive in any
order. A retry reuses its request's number, so the broker answers it from what
it stored instead of storing it again.

A send that fails for good leaves a number the broker may never have stored: a
gap that would stop the window ``window`` sends later. So the next send takes a
new producer id (or epoch) and starts again at 0; sends in flight keep theirs.
A new epoch of ``idempotent_id`` would fence them, so it waits until they end.
Shared by the producers (plain and batch sends) and the transaction producers
(half sends), which all run on an event loop (the blocking ones on the SDK's
loop thread), so one asyncio ``send`` serves them all.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

import msgspec

from halfmq.errors import UnknownProducerId
from halfmq.wire import ProducerIdResult, TxnInitResult

from . import endpoints
from .endpoints import Call
from .retry import AsyncRetrying

__all__ = ["Numbering", "numbering_for"]

Numbers = dict[str, int]


SPREAD = 512  # half the broker's default window (HALFMQ_BROKER_IDEMPOTENT_SEND_WINDOW, 1024)


def numbering_for(idempotent: bool, idempotent_id: str | None, transactional_id: str | None = None) -> Numbering | None:
    """A producer's numbering, None when ``idempotent=False``; a ValueError for settings that contradict each other."""
    if idempotent_id is not None and not idempotent:
        raise ValueError("idempotent_id given with idempotent=False: leave one of them out")
    if idempotent_id is not None and transactional_id is not None:
        raise ValueError("idempotent_id and transactional_id both name the producer: give only transactional_id")
    return Numbering(idempotent_id) if idempotent else None


def _key(numbers: Numbers) -> tuple[int, int, int]:
    return numbers["producer_id"], numbers["epoch"], numbers["sequence"]


class Numbering:
    """The producer id and epoch in use and the next sequence; no I/O (the producers' ``send`` drives it)."""

    def __init__(self, idempotent_id: str | None = None) -> None:
        """``idempotent_id``: number under this stable identity (a new epoch of it per id) instead of fresh producer ids."""
        self.idempotent_id = idempotent_id
        self.ids: Numbers | None = None
        self.sequence = 0
        # Sends holding a number: a new epoch of ``idempotent_id`` fences the old one, so its ``init`` waits until none
        # is left in flight (a new producer id of our own fences nothing and does not wait).
        self._in_flight = 0
        # (producer_id, epoch, sequence) of every numbered send not yet settled: a new number waits while it would be
        # SPREAD past the oldest of these, so one send stuck in retries (a failover) cannot push the others past
        # the broker's window (its gap rule would refuse them with OUT_OF_ORDER_SEQUENCE).
        self._outstanding: set[tuple[int, int, int]] = set()
        self._settled: asyncio.Condition | None = None  # made on first use, inside the running loop
        self._lock = asyncio.Lock()  # one fetch of new ids at a time

    def init(self) -> Call[ProducerIdResult] | Call[TxnInitResult]:
        """The request for new ids: a fresh producer id, or the next epoch of ``idempotent_id``."""
        if self.idempotent_id is None:
            return endpoints.new_producer_id()
        return endpoints.txn_init(self.idempotent_id, None)

    def initialised(self, result: ProducerIdResult | TxnInitResult) -> None:
        """New ids start their sequence at 0 (the broker's window is per producer id and epoch)."""
        self.ids, self.sequence = {"producer_id": result.producer_id, "epoch": result.epoch}, 0

    def take(self) -> Numbers:
        """The next number (with the ids), taken for one request and all its retries."""
        assert self.ids is not None
        numbers = {**self.ids, "sequence": self.sequence}
        self.sequence += 1
        self._outstanding.add(_key(numbers))
        return numbers

    def may_take(self) -> bool:
        """False while the next number would be ``SPREAD`` or more past the oldest unsettled one of the same ids."""
        if self.ids is None:
            return True
        ids = (self.ids["producer_id"], self.ids["epoch"])
        oldest = min((seq for pid, epoch, seq in self._outstanding if (pid, epoch) == ids), default=self.sequence)
        return self.sequence - oldest < SPREAD

    def failed(self, numbers: Numbers) -> None:
        """A send numbered ``numbers`` failed for good: later sends take new ids, unless that already happened."""
        if self.ids is not None and (self.ids["producer_id"], self.ids["epoch"]) == (numbers["producer_id"], numbers["epoch"]):
            self.ids = None

    @staticmethod
    def numbered(call: Call[Any], numbers: Numbers) -> Call[Any]:
        """``call`` with the numbers added to its body."""
        return replace(call, body=msgspec.structs.replace(call.body, **numbers))

    async def send(self, fetch: AsyncRetrying, send: AsyncRetrying,
                   transport: Callable[[Call[Any]], Awaitable[Any]], call: Call[Any]) -> Any:
        """``call`` with the next number in its body, sent through ``transport`` with the ``send`` policy (every retry
        carries the same number); when there are no ids yet, ``fetch`` gets them first (one caller at a time)."""
        if self._settled is None:
            self._settled = asyncio.Condition()
        settled = self._settled
        for attempt in (1, 2):
            async with self._lock:
                if self.ids is None:
                    if self.idempotent_id is not None:
                        async with settled:
                            await settled.wait_for(lambda: self._in_flight == 0)
                    self.initialised(await fetch(transport, self.init()))
                if not self.may_take():
                    async with settled:
                        await settled.wait_for(self.may_take)
                numbers = self.take()
                self._in_flight += 1
            try:
                return await send(transport, self.numbered(call, numbers))
            except UnknownProducerId:
                self.failed(numbers)
                if attempt == 2:
                    raise
            except BaseException:
                self.failed(numbers)
                raise
            finally:
                self._in_flight -= 1
                self._outstanding.discard(_key(numbers))
                async with settled:
                    settled.notify_all()
        raise AssertionError("unreachable")
