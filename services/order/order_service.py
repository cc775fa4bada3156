"""Placing an order: half message, order created in the local transaction, end (or check-back)."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone

import orjson

from halfmq.client import AsyncTransactionProducer, BrokerError, LocalTransactionState, OutgoingMessage, SendStatus

from ..http_problems import ServiceProblem
from .local_transaction import Fault, InjectedFailure, LocalOrder
from .models import Order
from .repository import IdempotencyKeyTaken, NewOrder, OrderRepository
from .rules import fingerprint
from .schemas import OrderCreate


@dataclass(frozen=True)
class Placed:
    order: Order
    message_state: str
    transaction_id: str | None
    replayed: bool = False


class OrderService:
    def __init__(self, repo: OrderRepository, producer: AsyncTransactionProducer, topic: str, faults_enabled: bool) -> None:
        self.repo = repo
        self.producer = producer
        self.topic = topic
        self.faults_enabled = faults_enabled

    def parse_fault(self, header: str | None) -> Fault | None:
        if header is None:
            return None
        if not self.faults_enabled:
            raise ServiceProblem(403, "FAULTS_DISABLED", "fault injection is off; start the service with ORDER_FAULTS_ENABLED=true")
        try:
            return Fault(header)
        except ValueError:
            raise ServiceProblem(400, "UNKNOWN_FAULT", f"X-Fault must be one of {[f.value for f in Fault]}") from None

    async def place(self, request: OrderCreate, idempotency_key: str | None, fault: Fault | None) -> Placed:
        print_ = fingerprint(request.user_id, request.amount)
        if idempotency_key is not None:
            replay = await self._replay(idempotency_key, print_)
            if replay is not None:
                return replay
        new = NewOrder(uuid.uuid4().hex, request.user_id, request.amount, datetime.now(timezone.utc), idempotency_key, print_)
        body = {"order_id": new.order_id, "user_id": new.user_id, "amount": str(new.amount), "created_at": new.created_at.isoformat()}
        message = OutgoingMessage(body=orjson.dumps(body).decode(), keys=[new.order_id], tag="order_created")
        local = LocalOrder(new, fault)
        try:
            result = await self.producer.send_in_transaction(self.topic, message, local)
        except BrokerError as exc:
            raise ServiceProblem(503, "BROKER_UNAVAILABLE", f"the order was not placed: the broker refused or could not be reached ({exc.code})", retriable=True) from exc
        if result.local_state is LocalTransactionState.ROLLBACK_MESSAGE:
            if isinstance(result.local_error, IdempotencyKeyTaken) and idempotency_key is not None:
                replay = await self._replay(idempotency_key, print_)
                if replay is not None:
                    return replay
            if result.send_status is not SendStatus.SEND_OK:
                raise ServiceProblem(503, "BROKER_NOT_DURABLE", f"the broker answered {result.send_status.value}; the order was not placed", retriable=True)
            if isinstance(result.local_error, InjectedFailure):
                raise ServiceProblem(503, "LOCAL_TRANSACTION_FAILED", str(result.local_error), retriable=True)
            raise ServiceProblem(503, "LOCAL_TRANSACTION_FAILED", f"the order could not be stored: {type(result.local_error).__name__}", retriable=True)
        # The local transaction hands back the order it committed; read it only if it did not.
        order = local.created or await asyncio.to_thread(self.repo.get, new.order_id)
        if order is None:  # UNKNOW without a committed order cannot happen here; be explicit if it does
            raise ServiceProblem(503, "LOCAL_TRANSACTION_FAILED", "the order is not in the database after its local transaction", retriable=True)
        committed = result.local_state is LocalTransactionState.COMMIT_MESSAGE and result.end_error is None
        return Placed(order, "committed" if committed else "pending_check", result.transaction_id)

    async def _replay(self, key: str, print_: str) -> Placed | None:
        found = await asyncio.to_thread(self.repo.by_idempotency_key, key)
        if found is None:
            return None
        order, stored_print = found
        if stored_print != print_:
            raise ServiceProblem(409, "IDEMPOTENCY_KEY_REUSED", "this Idempotency-Key was used for a different order")
        transaction_id = await asyncio.to_thread(self.repo.transaction_of, order.order_id)
        state = "pending_check"
        if transaction_id is not None:
            try:
                if (await self.producer.get_transaction(transaction_id)).get("state") == "committed":
                    state = "committed"
            except BrokerError:
                pass  # the order exists; its message is settled by check-back if not yet committed
        return Placed(order, state, transaction_id, replayed=True)
