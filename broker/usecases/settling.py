"""Settle received messages: ack, nack, change a delivery's invisible time, send one to the DLQ.

Who may: ``receiving.subscriber`` (the group and the topic), checked by the front's caller first. An ack is
answered once its record in the log is durable (``DeliveryService.ack``); a nack changes nothing durable.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from halfmq.broker.runtime import BrokerRuntime


def _settled(results: list[tuple[str, bool]]) -> dict:
    """``wire.SettleResponse``'s keys, built as a dict and encoded with orjson on purpose: for 16 receipt handles
    this is ~0.3 us faster than the struct with msgspec (long strings; docs/router-plan.md, "Hot path")."""
    return {"results": [{"receipt_handle": h, "status": "OK" if ok else "EXPIRED"} for h, ok in results]}


async def ack(rt: BrokerRuntime, group: str, topic: str, handles: list[str]) -> dict[str, Any]:
    """Answered once the ``acks`` record is written (one broker) or durable as the ack mode says (a set: ``_durable``),
    so an ack answered OK is never delivered again, by this broker after a kill -9 or by a set's next leader."""
    results = rt.delivery.ack(group, topic, handles)
    await _durable(rt, results)
    return _settled(results)


async def _durable(rt: BrokerRuntime, results: list[tuple[str, bool]]) -> None:
    """In a broker set, wait until the ``acks`` record is durable as the ack mode says (a send's wait: the next leader
    has it). One broker answers once it is written: a kill -9 keeps it (the page cache), a power cut may lose the last
    acks (delivered again: at-least-once), and an fsync per ack would halve its consume throughput."""
    wait = rt.settled_durable
    if wait is None:
        return
    for _, ok in results:
        if ok:
            await wait(rt.delivery.acks_end)
            return


def nack(rt: BrokerRuntime, group: str, topic: str, handles: list[str], reason: str | None = None) -> dict[str, Any]:
    return _settled(rt.delivery.nack(group, topic, handles, reason))


async def ack_one(rt: BrokerRuntime, group: str, topic: str, handle: str) -> bool:
    """One RocketMQ 5 ack entry: False if the handle is expired or settled."""
    results = rt.delivery.ack(group, topic, [handle])
    await _durable(rt, results)
    return results[0][1]


def change_invisible(rt: BrokerRuntime, group: str, topic: str, handle: str, seconds: float) -> bool:
    return rt.delivery.change_invisible(group, topic, handle, seconds)


def dead_letter(rt: BrokerRuntime, group: str, topic: str, handle: str) -> bool:
    return rt.delivery.dead_letter(group, topic, handle)
