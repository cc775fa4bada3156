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

from halfmq.client import BrokerError, OutgoingMessage
from halfmq.client.sqlalchemy.barrier_base import DuplicateBusinessKey, HalfNotDurable
from halfmq.errors import TransactionNotFound

from ..order_events import KIND, REFUND_TAG, OrderEvent
from .errors import (
    BrokerNotDurable,
    BrokerUnreachable,
    FaultsDisabled,
    IdempotencyKeyReused,
    LocalTransactionFailed,
    OrderAlreadyRefunded,
    OrderError,
    OrderNotFound,
    OrderNotSent,
    UnknownFault,
)
from .local_transaction import Fault, InjectedFailure, after_commit, create_order, refund_order
from .models import Order
from .payments import PaymentDueSender, payable
from .ports import Barrier, OrderStore, TransactionReader
from .repository import NewOrder
from .rules import REFUNDED, fingerprint, order_sent, refund_key
from .schemas import OrderCreate


@dataclass(frozen=True)
class Placed:
    order: Order
    message_state: str
    transaction_id: str | None
    replayed: bool = False


class OrderService:
    def __init__(self, repo: OrderStore, barrier: Barrier, producer: TransactionReader, topic: str, faults_enabled: bool) -> None:
        self.repo = repo
        self.barrier = barrier
        self.producer = producer
        self.topic = topic
        self.faults_enabled = faults_enabled
        self.payment_due: PaymentDueSender | None = None  # each order's delayed "payment due" companion (the app sets it)

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
        try:
            sent = await self.barrier.send(self.producer, self.topic, order_message(new), new.order_id,
                                           create_order(self.repo, new, fault), after_commit(fault), also=self._payment_due_of(new))
        except BrokerError as exc:
            raise BrokerUnreachable(f"the order was not placed: the broker refused or could not be reached ({exc.code})") from exc
        except HalfNotDurable as exc:
            raise BrokerNotDurable(f"{exc}; the order was not placed") from exc
        except Exception as exc:
            if idempotency_key is not None:  # a request with the same key may have committed first
                replay = await self._replay(idempotency_key, print_)
                if replay is not None:
                    return replay
            raise _not_placed(exc) from exc
        return Placed(sent.value, "committed" if sent.committed else "pending_check", sent.transaction_id)

    def _payment_due_of(self, new: NewOrder) -> list[tuple[str, OutgoingMessage]]:
        """The companions of an order's message: its payment-due message, decided by the same local transaction."""
        return [] if self.payment_due is None else self.payment_due.companions(new)

    async def pay(self, order_id: str) -> Order:
        """Mark the order paid; paying it again answers the same. OrderCancelled once its payment fell due unpaid."""
        return payable(order_id, await asyncio.to_thread(self.repo.pay, order_id, datetime.now(UTC)))

    async def _replay(self, key: str, print_: str) -> Placed | None:
        found = await asyncio.to_thread(self.repo.by_idempotency_key, key)
        if found is None:
            return None
        order, stored_print = found
        if stored_print != print_:
            raise IdempotencyKeyReused("this Idempotency-Key was used for a different order")
        transaction_id = await asyncio.to_thread(self.barrier.transaction_of, order.order_id)
        state = "pending_check"
        if transaction_id is not None:
            try:
                if (await self.producer.get_transaction(transaction_id)).get("state") == "committed":
                    state = "committed"
            except BrokerError:
                pass  # the order exists; its message is settled by check-back if not yet committed
        return Placed(order, state, transaction_id, replayed=True)

    async def refund(self, order_id: str) -> Placed:
        """Send the order's refund through the barrier, once: the order becomes refunded in the refund's local transaction.

        Only an order whose message is on ORDER_TOPIC is refunded: the refund then lands after it in the
        user's message group, so the credit service applies it after the order's credit.
        """
        order = await self.get(order_id)
        if order.status == REFUNDED:
            raise OrderAlreadyRefunded(f"order {order_id!r} is refunded already")
        state = await self._message_state(order_id)
        if not order_sent(state):
            raise OrderNotSent(f"the message of order {order_id!r} is {state}, not committed: nothing to refund yet")
        try:
            sent = await self.barrier.send(self.producer, self.topic, refund_message(order, datetime.now(UTC)), refund_key(order_id),
                                           refund_order(self.repo, order_id))
        except OrderError:
            raise
        except DuplicateBusinessKey:
            raise OrderAlreadyRefunded(f"order {order_id!r} is refunded already") from None
        except BrokerError as exc:
            raise BrokerUnreachable(f"the order was not refunded: the broker refused or could not be reached ({exc.code})") from exc
        except HalfNotDurable as exc:
            raise BrokerNotDurable(f"{exc}; the order was not refunded") from exc
        except Exception as exc:
            raise LocalTransactionFailed(f"the refund could not be stored: {type(exc).__name__}") from exc
        order.status = REFUNDED
        return Placed(order, "committed" if sent.committed else "pending_check", sent.transaction_id)

    async def _message_state(self, order_id: str) -> str | None:
        """The broker's state of the order's transaction; None once the record or the broker's transaction is gone."""
        transaction_id = await asyncio.to_thread(self.barrier.transaction_of, order_id)
        if transaction_id is None:
            return None
        try:
            return (await self.producer.get_transaction(transaction_id)).get("state")
        except TransactionNotFound:
            return None
        except BrokerError as exc:
            raise BrokerUnreachable(f"the order's message state is unknown: the broker could not be reached ({exc.code})") from exc


def order_message(new: NewOrder) -> OutgoingMessage:
    """The ORDER_TOPIC message the credit service consumes (its body is that service's contract)."""
    body = {"order_id": new.order_id, "user_id": new.user_id, "amount": str(new.amount), "created_at": new.created_at.isoformat()}
    return OutgoingMessage(body=orjson.dumps(body).decode(), keys=[new.order_id], tag="order_created", message_group=new.user_id)


def refund_message(order: Order, refunded_at: datetime) -> OutgoingMessage:
    """The refund's ORDER_TOPIC message: in its user's message group, as the order's, so it is credited after the order."""
    body = {"order_id": order.order_id, "user_id": order.user_id, "amount": str(order.amount), "created_at": refunded_at.isoformat(),
            KIND: OrderEvent.REFUND.value}
    return OutgoingMessage(body=orjson.dumps(body).decode(), keys=[order.order_id], tag=REFUND_TAG, message_group=order.user_id)


def _not_placed(error: Exception) -> LocalTransactionFailed:
    """Why a failed local transaction placed no order."""
    if isinstance(error, InjectedFailure):
        return LocalTransactionFailed(str(error))
    return LocalTransactionFailed(f"the order could not be stored: {type(error).__name__}")
