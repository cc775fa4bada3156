"""What the order service needs from the SDK and from its database, as small Protocols.

The service layer depends on these, not on the classes behind them: the SDK's
``TransactionBarrier`` and ``AsyncTransactionProducer`` and ``OrderRepository`` satisfy them
structurally (no inheritance; ``tests/unit/services/test_ports.py`` checks), and the unit tests
pass fakes.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, Protocol

from sqlalchemy.orm import Session

from halfmq.client import AsyncTransactionProducer, OutgoingMessage
from halfmq.client.async_transaction_producer import Also
from halfmq.client.messages import Body
from halfmq.client.sqlalchemy.barrier_base import AfterCommit, R, Sent

from .models import Order
from .repository import NewOrder


class TransactionReader(Protocol):
    """The broker's view of a transaction: the part of the SDK's transaction producer the service reads."""

    async def get_transaction(self, transaction_id: str) -> dict[str, Any]: ...


class Barrier(Protocol):
    """Half message, ``run`` and the transaction record in one database transaction, end: the SDK's barrier."""

    async def send(self, producer: AsyncTransactionProducer, topic: str, message: OutgoingMessage | Body, business_key: str,
                   run: Callable[[Session], R], after_commit: AfterCommit | None = None, *, also: Also = ()) -> Sent[R]: ...

    def transaction_of(self, business_key: str) -> str | None: ...


class OrderStore(Protocol):
    """The orders and their idempotency keys."""

    def insert(self, session: Session, new: NewOrder) -> Order: ...

    def mark_refunded(self, session: Session, order_id: str) -> bool: ...

    def get(self, order_id: str) -> Order | None: ...

    def by_user(self, user_id: str, limit: int, offset: int) -> list[Order]: ...

    def by_idempotency_key(self, key: str) -> tuple[Order, str] | None: ...

    def pay(self, order_id: str, now: datetime) -> Order | None: ...
