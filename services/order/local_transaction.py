"""What runs in an order's local transaction, beside the barrier's record: the order, and the faults.

The SDK's barrier (``halfmq.client.sqlalchemy.barrier``) owns the transaction record and the
check-back. Fault injection (for demos and tests) lives here because each fault is a precise
point in the local transaction: before its commit, or between the commit and the end.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from enum import Enum

from sqlalchemy.orm import Session

from halfmq.client import LocalTransactionState

from .errors import OrderAlreadyRefunded
from .models import Order
from .ports import OrderStore
from .repository import NewOrder

log = logging.getLogger(__name__)

CRASH_EXIT_CODE = 86


class Fault(str, Enum):
    FAIL_LOCAL_TX = "fail-local-tx"
    CRASH_AFTER_COMMIT = "crash-after-commit"
    DROP_END = "drop-end"


class InjectedFailure(Exception):
    """The fail-local-tx fault: the local transaction raises before it commits."""


def create_order(repo: OrderStore, new: NewOrder, fault: Fault | None) -> Callable[[Session], Order]:
    """The barrier's ``run``: insert the order (and its Idempotency-Key) in the barrier's session."""
    def run(session: Session) -> Order:
        order = repo.insert(session, new)
        if fault is Fault.FAIL_LOCAL_TX:
            raise InjectedFailure("injected fault: fail-local-tx")  # after the inserts: they roll back
        return order
    return run


def after_commit(fault: Fault | None) -> Callable[[Order], LocalTransactionState | None] | None:
    """The barrier's ``after_commit`` for the faults that strike once the order has committed."""
    if fault is Fault.CRASH_AFTER_COMMIT:
        def crash(order: Order) -> None:
            log.warning("injected fault crash-after-commit: order %s committed, exiting before end", order.order_id)
            logging.shutdown()
            os._exit(CRASH_EXIT_CODE)
        return crash
    if fault is Fault.DROP_END:
        # The order is committed but no decision is sent: the broker settles it by check-back.
        return lambda order: LocalTransactionState.UNKNOW
    return None


def refund_order(repo: OrderStore, order_id: str) -> Callable[[Session], None]:
    """The refund's ``run``: the order becomes refunded with the refund's record; a second refund rolls back its own."""
    def run(session: Session) -> None:
        if not repo.mark_refunded(session, order_id):
            raise OrderAlreadyRefunded(f"order {order_id!r} is refunded already")
    return run
