"""What the order service needs from the SDK and from its database, as small Protocols.

The service layer depends on these, not on the classes behind them: the SDK's
``AsyncTransactionProducer`` and ``OrderRepository`` satisfy them structurally (no
inheritance; ``tests/unit/services/test_ports.py`` checks), and the unit tests
pass fakes. A later sender (the SDK's barrier) has only to fit ``TransactionSender``.
"""

from __future__ import annotations

from typing import Any, Protocol

from halfmq.client import OutgoingMessage, TransactionSendResult

from .models import Order
from .repository import NewOrder


class TransactionSender(Protocol):
    """Half message, local transaction, end: the part of the SDK's transaction producer the service uses."""

    async def send_in_transaction(self, topic: str, message: OutgoingMessage, arg: Any = None) -> TransactionSendResult: ...

    async def get_transaction(self, transaction_id: str) -> dict[str, Any]: ...


class OrderStore(Protocol):
    """The orders, their transaction records and idempotency keys."""

    def create(self, new: NewOrder, transaction_id: str, *, fail_before_commit: Exception | None = None) -> Order: ...

    def create_many(self, batch: list[tuple[NewOrder, str]]) -> list[Order | Exception]: ...

    def get(self, order_id: str) -> Order | None: ...

    def exists(self, order_id: str) -> bool: ...

    def by_user(self, user_id: str, limit: int, offset: int) -> list[Order]: ...

    def by_idempotency_key(self, key: str) -> tuple[Order, str] | None: ...

    def transaction_of(self, order_id: str) -> str | None: ...
