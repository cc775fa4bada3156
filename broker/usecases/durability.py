"""Waiting until a write is on disk (and, in a broker set, on the replicas), for every front."""

from __future__ import annotations

from halfmq.broker.store.flush_waiter import FlushTimedOut
from halfmq.wire import SendStatus

from .ports import Durable

__all__ = ["FlushTimedOut", "durable_status", "flush_outcome"]


async def flush_outcome(durable: Durable, end: int) -> FlushTimedOut | None:
    """Wait until ``end`` is durable; the timeout as a value, for answers that report it per item."""
    try:
        await durable(end)
    except FlushTimedOut as exc:
        return exc
    return None


async def durable_status(durable: Durable, end: int) -> SendStatus:
    """SEND_OK once ``end`` is durable; the flush timeout's status otherwise (a broker set's replicas:
    FLUSH_SLAVE_TIMEOUT / SLAVE_NOT_AVAILABLE)."""
    try:
        await durable(end)
    except FlushTimedOut as exc:
        return SendStatus(getattr(exc, "send_status", SendStatus.FLUSH_DISK_TIMEOUT.value))
    return SendStatus.SEND_OK
