"""Settle received messages: ack, nack, change a delivery's invisible time, send one to the DLQ.

Each takes the ``Subscriber`` grant (``Access.subscriber``: the group and the topic) the front asked for first. An ack
is answered once its record in the log is durable (``DeliveryService.ack``); a nack changes nothing durable.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from halfmq.broker.security.access import Subscriber

from .ports import Deliveries, Durable


def _settled(results: list[tuple[str, bool]]) -> dict:
    """``wire.SettleResponse``'s keys, built as a dict and encoded with orjson on purpose: for 16 receipt handles
    this is ~0.3 us faster than the struct with msgspec (long strings; docs/history/router-plan.md, "Hot path")."""
    return {"results": [{"receipt_handle": h, "status": "OK" if ok else "EXPIRED"} for h, ok in results]}


@dataclass(eq=False)  # a use case, compared by identity
class Settling:
    deliveries: Deliveries
    settled_durable: Durable | None

    async def ack(self, subscriber: Subscriber, handles: list[str]) -> dict[str, Any]:
        """Answered once the ``acks`` record is written (one broker) or durable as the ack mode says (a set),
        so an ack answered OK is never delivered again, by this broker after a kill -9 or by a set's next leader."""
        results = self.deliveries.ack(subscriber.group, subscriber.topic, handles)
        await self._durable(results)
        return _settled(results)

    async def _durable(self, results: list[tuple[str, bool]]) -> None:
        """In a broker set, wait until the ``acks`` record is durable as the ack mode says (a send's wait: the next leader
        has it). One broker answers once it is written: a kill -9 keeps it (the page cache), a power cut may lose the last
        acks (delivered again: at-least-once)."""
        wait = self.settled_durable
        if wait is None:
            return
        for _, ok in results:
            if ok:
                await wait(self.deliveries.acks_end)
                return

    def nack(self, subscriber: Subscriber, handles: list[str], reason: str | None = None) -> dict[str, Any]:
        return _settled(self.deliveries.nack(subscriber.group, subscriber.topic, handles, reason))

    async def ack_one(self, subscriber: Subscriber, handle: str) -> bool:
        """One RocketMQ 5 ack entry: False if the handle is expired or settled."""
        results = self.deliveries.ack(subscriber.group, subscriber.topic, [handle])
        await self._durable(results)
        return results[0][1]

    def change_invisible(self, subscriber: Subscriber, handle: str, seconds: float) -> bool:
        return self.deliveries.change_invisible(subscriber.group, subscriber.topic, handle, seconds)

    def change_invisible_many(self, subscriber: Subscriber, handles: list[str], seconds: float) -> dict[str, Any]:
        """The HTTP form of RocketMQ 5's ChangeInvisibleDuration: each handle ``OK`` or ``EXPIRED`` (not held)."""
        return _settled([(h, self.change_invisible(subscriber, h, seconds)) for h in handles])

    def dead_letter(self, subscriber: Subscriber, handle: str) -> bool:
        return self.deliveries.dead_letter(subscriber.group, subscriber.topic, handle)
