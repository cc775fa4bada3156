"""The order service's TransactionListener: the order is created inside the local transaction.

The broker's check-back asks whether an order exists; the answer follows
``rules.check_back_answer``. Fault injection (for demos and tests) lives here
because each fault is a precise point in the local transaction.

Local transactions run on the event loop and share database transactions through a
group commit (``services.group_commit``): each order still commits its row and its
transaction record together, before its local transaction answers.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum

import orjson

from halfmq.client import LocalTransactionState, Message, OutgoingMessage

from ..group_commit import GroupCommit
from .models import Order
from .ports import OrderStore
from .repository import NewOrder
from .rules import CheckAnswer, check_back_answer

log = logging.getLogger(__name__)

CRASH_EXIT_CODE = 86


class Fault(str, Enum):
    FAIL_LOCAL_TX = "fail-local-tx"
    CRASH_AFTER_COMMIT = "crash-after-commit"
    DROP_END = "drop-end"


class InjectedFailure(Exception):
    """The fail-local-tx fault: the local transaction raises before it commits."""


@dataclass
class LocalOrder:
    """The local transaction's argument; ``created`` is filled in once the order has committed."""

    order: NewOrder
    fault: Fault | None = None
    created: Order | None = field(default=None, compare=False)


_STATES = {
    CheckAnswer.COMMIT: LocalTransactionState.COMMIT_MESSAGE,
    CheckAnswer.ROLLBACK: LocalTransactionState.ROLLBACK_MESSAGE,
    CheckAnswer.UNKNOWN: LocalTransactionState.UNKNOW,
}


class OrderTransactionListener:
    def __init__(self, repository: OrderStore, local_tx_timeout: float, write_batch_max: int = 64,
                 clock: Callable[[], float] = time.time) -> None:
        self._repo = repository
        self._timeout = local_tx_timeout
        self._clock = clock
        self._writes: GroupCommit[tuple[NewOrder, str], Order] = GroupCommit(repository.create_many, write_batch_max)

    async def execute_local_transaction(self, msg: OutgoingMessage, arg: LocalOrder) -> LocalTransactionState:
        transaction_id = msg.properties["TRANSACTION_ID"]
        if arg.fault is Fault.FAIL_LOCAL_TX:
            # In a database transaction of its own, so the failure (raised by ``create`` after
            # the inserts) rolls back this order only, never a group commit's other orders.
            failure = InjectedFailure("injected fault: fail-local-tx")
            await asyncio.to_thread(self._repo.create, arg.order, transaction_id, fail_before_commit=failure)
        arg.created = await self._writes.submit((arg.order, transaction_id))
        if arg.fault is Fault.CRASH_AFTER_COMMIT:
            log.warning("injected fault crash-after-commit: order %s committed, exiting before end", arg.order.order_id)
            logging.shutdown()
            os._exit(CRASH_EXIT_CODE)
        if arg.fault is Fault.DROP_END:
            # The order is committed but the producer reports no decision: the broker
            # receives no commit or rollback and must settle it by check-back.
            return LocalTransactionState.UNKNOW
        return LocalTransactionState.COMMIT_MESSAGE

    def check_local_transaction(self, msg: Message) -> LocalTransactionState:
        order_id = order_id_of(msg)
        found = order_id is not None and self._repo.exists(order_id)
        age = self._clock() - msg.born_timestamp / 1000
        answer = check_back_answer(found, age, self._timeout)
        log.info("check-back for order %s (age %.1fs): %s", order_id, age, answer.value)
        return _STATES[answer]


def order_id_of(msg: Message) -> str | None:
    try:
        return str(orjson.loads(msg.body)["order_id"])
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return msg.keys[0] if msg.keys else None
