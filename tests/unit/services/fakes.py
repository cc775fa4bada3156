"""In-memory stand-ins for the services' ports: the order store, the SDK's transaction sender, the credit ledger.

Each keeps the one promise the service relies on (an order, its transaction record and its
Idempotency-Key commit together or not at all; a send runs the listener between half and
end, as the SDK does) and lets a test switch a failure on. The real classes are checked
against the same Protocols in ``test_ports.py``; the process tests in tests/integration/services
run the real ones.
"""

from __future__ import annotations

import time
import uuid
from datetime import UTC, date, datetime
from typing import Any

import msgspec
import orjson

from halfmq.client import (
    AsyncTransactionListener,
    BrokerError,
    BrokerUnavailable,
    HalfSendResult,
    LocalTransactionState,
    Message,
    OutgoingMessage,
    SendStatus,
    TransactionSendResult,
)
from halfmq.services.credit.models import CreditAccount, CreditRecord, SummaryDay, SummaryRun, SummaryUser
from halfmq.services.credit.rules import CreditCommand
from halfmq.services.order.models import Order
from halfmq.services.order.repository import IdempotencyKeyTaken, NewOrder


class DatabaseDown(Exception):
    """What a fake store raises while ``down`` is set."""


class FakeOrderRepository:
    def __init__(self) -> None:
        self.orders: dict[str, Order] = {}
        self.transactions: dict[str, str] = {}  # order id -> transaction id
        self.keys: dict[str, tuple[str, str]] = {}  # Idempotency-Key -> (order id, fingerprint)
        self.down = False

    def create(self, new: NewOrder, transaction_id: str, *, fail_before_commit: Exception | None = None) -> Order:
        if self.down:
            raise DatabaseDown("the database is down")
        if new.idempotency_key is not None and new.idempotency_key in self.keys:
            raise IdempotencyKeyTaken(new.idempotency_key)
        if fail_before_commit is not None:
            raise fail_before_commit  # as the real one: raised inside the transaction, so nothing is kept
        order = Order(order_id=new.order_id, user_id=new.user_id, amount=new.amount, status="created", created_at=new.created_at)
        self.orders[new.order_id] = order
        self.transactions[new.order_id] = transaction_id
        if new.idempotency_key is not None:
            self.keys[new.idempotency_key] = (new.order_id, new.fingerprint)
        return order

    def create_many(self, batch: list[tuple[NewOrder, str]]) -> list[Order | Exception]:
        outcomes: list[Order | Exception] = []
        for new, transaction_id in batch:
            try:
                outcomes.append(self.create(new, transaction_id))
            except Exception as exc:  # noqa: BLE001 - as the real repository reports it
                outcomes.append(exc)
        return outcomes

    def get(self, order_id: str) -> Order | None:
        return self.orders.get(order_id)

    def exists(self, order_id: str) -> bool:
        return order_id in self.orders

    def by_user(self, user_id: str, limit: int, offset: int) -> list[Order]:
        mine = sorted((o for o in self.orders.values() if o.user_id == user_id), key=lambda o: (o.created_at, o.order_id))
        return mine[offset : offset + limit]

    def by_idempotency_key(self, key: str) -> tuple[Order, str] | None:
        if key not in self.keys:
            return None
        order_id, fingerprint = self.keys[key]
        return self.orders[order_id], fingerprint

    def transaction_of(self, order_id: str) -> str | None:
        return self.transactions.get(order_id)


_BROKER_STATE = {
    LocalTransactionState.COMMIT_MESSAGE: "committed",
    LocalTransactionState.ROLLBACK_MESSAGE: "rolled_back",
    LocalTransactionState.UNKNOW: "pending",
}


class FakeTransactionSender:
    """The SDK producer's send: half, ``execute_local_transaction``, end, with the broker's answers held in a dict.

    ``down``: every call fails as an unreachable broker does. ``half_status``: what the half
    send answers (not SEND_OK: rolled back without running the listener, as the SDK does).
    ``end_lost``: the end never arrives, so the transaction stays pending for the check-back.
    """

    def __init__(self, listener: AsyncTransactionListener) -> None:
        self.listener = listener
        self.down = False
        self.half_status = SendStatus.SEND_OK
        self.end_lost = False
        self.transactions: dict[str, dict[str, Any]] = {}
        self.sent: list[OutgoingMessage] = []

    async def send_in_transaction(self, topic: str, message: OutgoingMessage, arg: Any = None) -> TransactionSendResult:
        if self.down:
            raise BrokerUnavailable("connection refused")
        transaction_id, msg_id = uuid.uuid4().hex, uuid.uuid4().hex
        half = HalfSendResult(status=self.half_status, transaction_id=transaction_id, msg_id=msg_id, commit_log_offset=0, queue_offset=0)
        seen = msgspec.structs.replace(message, properties={**message.properties, "TRANSACTION_ID": transaction_id})
        state, local_error = LocalTransactionState.ROLLBACK_MESSAGE, None
        if self.half_status is SendStatus.SEND_OK:
            try:
                state = await self.listener.execute_local_transaction(seen, arg)
            except Exception as exc:  # noqa: BLE001 - as the SDK does: an exception is a rollback
                local_error = exc
        end_error = BrokerUnavailable("the end was lost") if self.end_lost else None
        broker_state = "pending" if end_error else _BROKER_STATE[state]
        self.transactions[transaction_id] = {"transaction_id": transaction_id, "state": broker_state}
        self.sent.append(seen)
        return TransactionSendResult(
            transaction_id=transaction_id, msg_id=msg_id, send_status=self.half_status, local_state=state, half=half,
            message=seen, end=None if end_error else self.transactions[transaction_id], end_error=end_error, local_error=local_error,
        )

    async def get_transaction(self, transaction_id: str) -> dict[str, Any]:
        if self.down:
            raise BrokerUnavailable("connection refused")
        if transaction_id not in self.transactions:
            raise BrokerError(f"no transaction {transaction_id}")
        return self.transactions[transaction_id]

    def committed(self) -> list[OutgoingMessage]:
        """The messages a consumer would see."""
        return [m for m in self.sent if self.transactions[m.properties["TRANSACTION_ID"]]["state"] == "committed"]


def broker_message(body: dict[str, Any] | str, *, keys: list[str] | None = None, born_at: float | None = None) -> Message:
    """A message as the broker hands it out (to a consumer or with a check-back), born at ``born_at`` seconds."""
    born_ms = int((time.time() if born_at is None else born_at) * 1000)
    text = body if isinstance(body, str) else orjson.dumps(body).decode()
    return Message(msg_id=uuid.uuid4().hex, topic="ORDER_TOPIC", queue_id=0, queue_offset=0, commit_log_offset=0,
                   born_timestamp=born_ms, store_timestamp=born_ms, body=text, keys=keys or [], delivery_attempt=1)


class FakeCreditLedger:
    """Credits by order id; an order already credited adds nothing (the real ledger's inbox, keyed by order id)."""

    def __init__(self) -> None:
        self.records: dict[str, CreditRecord] = {}
        self.balances: dict[str, int] = {}
        self.summary: tuple[SummaryRun, list[SummaryUser], list[SummaryDay]] | None = None
        self.down = False

    def apply_many(self, batch: list[tuple[CreditCommand, int, str]]) -> list[bool | Exception]:
        if self.down:
            raise DatabaseDown("the database is down")
        outcomes: list[bool | Exception] = []
        for cmd, points, message_id in batch:
            new = cmd.order_id not in self.records
            if new:
                self.records[cmd.order_id] = CreditRecord(
                    id=len(self.records) + 1, order_id=cmd.order_id, user_id=cmd.user_id, amount=cmd.amount,
                    points=points, message_id=message_id, created_at=datetime.now(UTC),
                )
                self.balances[cmd.user_id] = self.balances.get(cmd.user_id, 0) + points
            outcomes.append(new)
        return outcomes

    def account(self, user_id: str, recent: int = 20) -> tuple[CreditAccount | None, list[CreditRecord], int]:
        mine = sorted((r for r in self.records.values() if r.user_id == user_id), key=lambda r: r.id, reverse=True)
        account = None
        if user_id in self.balances:
            account = CreditAccount(user_id=user_id, balance=self.balances[user_id], updated_at=datetime.now(UTC))
        return account, mine[:recent], len(mine)

    def current_summary(self) -> tuple[SummaryRun, list[SummaryUser], list[SummaryDay]] | None:
        return self.summary

    def publish_summary(self, computed_at: datetime, users: dict[str, int], days: dict[date, int]) -> None:
        """A published Spark run: points per user and per day, one order each."""
        run = SummaryRun(run_id="r1", computed_at=computed_at)
        self.summary = (
            run,
            [SummaryUser(run_id="r1", user_id=u, points=p, orders=1, first_credit_at=computed_at, last_credit_at=computed_at)
             for u, p in sorted(users.items())],
            [SummaryDay(run_id="r1", day=d, points=p, orders=1) for d, p in sorted(days.items())],
        )
