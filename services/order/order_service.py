"""Placing an order: half message, order created in the local transaction, end (or check-back).

The service layer: it raises the order's domain errors (``errors``) and knows no HTTP; it
reaches the broker and the database only through the ``ports`` Protocols.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

import orjson

from halfmq.client import BrokerError, LocalTransactionState, OutgoingMessage, SendStatus, TransactionSendResult

from .errors import BrokerNotDurable, BrokerUnreachable, FaultsDisabled, IdempotencyKeyReused, LocalTransactionFailed, OrderNotFound, UnknownFault
from .local_transaction import Fault, InjectedFailure, LocalOrder
from .models import Order
from .ports import OrderStore, TransactionSender
from .repository import IdempotencyKeyTaken, NewOrder
from .rules import fingerprint
from .schemas import OrderCreate


@dataclass(frozen=True)
class Placed:
    order: Order
    message_state: str
    transaction_id: str | None
    replayed: bool = False


class OrderService:
    def __init__(self, repo: OrderStore, producer: TransactionSender, topic: str, faults_enabled: bool) -> None:
        self.repo = repo
        self.producer = producer
        self.topic = topic
        self.faults_enabled = faults_enabled

    def parse_fault(self, header: str | None) -> Fault | None:
        if header is None:
            return None
        if not self.faults_enabled:
            raise FaultsDisabled("fault injection is off; start the service with ORDER_FAULTS_ENABLED=true")
        try:
            return Fault(header)
        except ValueError:
            raise UnknownFault(f"X-Fault must be one of {[f.value for f in Fault]}") from None

    async def get(self, order_id: str) -> Order:
        order = await asyncio.to_thread(self.repo.get, order_id)
        if order is None:
            raise OrderNotFound(f"no order {order_id!r}")
        return order

    async def orders_of(self, user_id: str, limit: int, offset: int) -> list[Order]:
        return await asyncio.to_thread(self.repo.by_user, user_id, limit, offset)

    async def place(self, request: OrderCreate, idempotency_key: str | None, fault: Fault | None) -> Placed:
        print_ = fingerprint(request.user_id, request.amount)
        if idempotency_key is not None:
            replay = await self._replay(idempotency_key, print_)
            if replay is not None:
                return replay
        new = NewOrder(uuid.uuid4().hex, request.user_id, request.amount, datetime.now(UTC), idempotency_key, print_)
        local = LocalOrder(new, fault)
        try:
            result = await self.producer.send_in_transaction(self.topic, order_message(new), local)
        except BrokerError as exc:
            raise BrokerUnreachable(f"the order was not placed: the broker refused or could not be reached ({exc.code})") from exc
        if result.local_state is LocalTransactionState.ROLLBACK_MESSAGE:
            if isinstance(result.local_error, IdempotencyKeyTaken) and idempotency_key is not None:
                replay = await self._replay(idempotency_key, print_)
                if replay is not None:
                    return replay
            raise _not_placed(result)
        # The local transaction hands back the order it committed; read it only if it did not.
        order = local.created or await asyncio.to_thread(self.repo.get, new.order_id)
        if order is None:  # UNKNOW without a committed order cannot happen here; be explicit if it does
            raise LocalTransactionFailed("the order is not in the database after its local transaction")
        committed = result.local_state is LocalTransactionState.COMMIT_MESSAGE and result.end_error is None
        return Placed(order, "committed" if committed else "pending_check", result.transaction_id)

    async def _replay(self, key: str, print_: str) -> Placed | None:
        found = await asyncio.to_thread(self.repo.by_idempotency_key, key)
        if found is None:
            return None
        order, stored_print = found
        if stored_print != print_:
            raise IdempotencyKeyReused("this Idempotency-Key was used for a different order")
        transaction_id = await asyncio.to_thread(self.repo.transaction_of, order.order_id)
        state = "pending_check"
        if transaction_id is not None:
            try:
                if (await self.producer.get_transaction(transaction_id)).get("state") == "committed":
                    state = "committed"
            except BrokerError:
                pass  # the order exists; its message is settled by check-back if not yet committed
        return Placed(order, state, transaction_id, replayed=True)


def order_message(new: NewOrder) -> OutgoingMessage:
    """The ORDER_TOPIC message the credit service consumes (its body is that service's contract)."""
    body = {"order_id": new.order_id, "user_id": new.user_id, "amount": str(new.amount), "created_at": new.created_at.isoformat()}
    return OutgoingMessage(body=orjson.dumps(body).decode(), keys=[new.order_id], tag="order_created")


def _not_placed(result: TransactionSendResult) -> BrokerNotDurable | LocalTransactionFailed:
    """Why a rolled-back send placed no order."""
    if result.send_status is not SendStatus.SEND_OK:
        return BrokerNotDurable(f"the broker answered {result.send_status.value}; the order was not placed")
    if isinstance(result.local_error, InjectedFailure):
        return LocalTransactionFailed(str(result.local_error))
    return LocalTransactionFailed(f"the order could not be stored: {type(result.local_error).__name__}")
