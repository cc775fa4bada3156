"""The typed error (halfmq.errors, one class per stable code) a domain exception stands for, for every front."""

from __future__ import annotations

from halfmq.broker.store.flush_waiter import FlushTimedOut
from halfmq.broker.store.message_store import StoreClosed, StoreNotWritable
from halfmq.errors import BrokerError, FlushDiskTimeout, StoreUnavailable

STORE_ERRORS = (StoreNotWritable, StoreClosed, FlushTimedOut)


def as_broker_error(exc: Exception) -> BrokerError | None:
    """The problem a domain exception stands for: a refusing store, a flush that timed out; None for a bug."""
    if isinstance(exc, BrokerError):
        return exc
    if isinstance(exc, FlushTimedOut):
        return FlushDiskTimeout(str(exc))
    if isinstance(exc, STORE_ERRORS):
        return StoreUnavailable(str(exc))
    return None
