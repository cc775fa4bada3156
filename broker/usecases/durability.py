"""Waiting until a write is on disk (and, in a broker set, on the replicas), for every front."""

from __future__ import annotations

from typing import TYPE_CHECKING

from halfmq.broker.store.flush_waiter import FlushTimedOut
from halfmq.wire import SendStatus

if TYPE_CHECKING:
    from halfmq.broker.runtime import BrokerRuntime

__all__ = ["FlushTimedOut", "durable_status", "flush_outcome"]


async def flush_outcome(rt: BrokerRuntime, end: int) -> FlushTimedOut | None:
    """Wait until ``end`` is durable; the timeout as a value, for answers that report it per item."""
    try:
        await rt.durable(end)
    except FlushTimedOut as exc:
        return exc
    return None


async def durable_status(rt: BrokerRuntime, end: int) -> SendStatus:
    """SEND_OK once ``end`` is durable; the flush timeout's status otherwise (a broker set's replicas:
    FLUSH_SLAVE_TIMEOUT / SLAVE_NOT_AVAILABLE)."""
    try:
        await rt.durable(end)
    except FlushTimedOut as exc:
        return SendStatus(getattr(exc, "send_status", SendStatus.FLUSH_DISK_TIMEOUT.value))
    return SendStatus.SEND_OK
