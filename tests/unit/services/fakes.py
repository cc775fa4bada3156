"""In-memory stand-ins for the services' ports: the order store, the SDK's barrier, the credit ledger.

Each keeps the one promise the service relies on (an order, its transaction record and its
Idempotency-Key commit together or not at all; a send runs ``run`` between half and end, as
the SDK's barrier does) and lets a test switch a failure on. The real classes are checked
against the same Protocols in ``test_ports.py``; the process tests in tests/integration/services
run the real ones.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from datetime import UTC, date, datetime
from typing import Any

import msgspec
import orjson
from sqlalchemy.orm import Session

from halfmq.client import (
    AsyncTransactionProducer,
    BrokerError,
    BrokerUnavailable,
    HalfSendResult,
    LocalTransactionState,
    Message,
    OutgoingMessage,
    SendStatus,
    TransactionSendResult,
)
from halfmq.client.async_transaction_producer import Also
from halfmq.client.messages import Body
from halfmq.client.sqlalchemy.barrier_base import AfterCommit, DuplicateBusinessKey, HalfNotDurable, R, Sent
from halfmq.services.credit.models import CreditAccount, CreditRecord, SummaryDay, SummaryRun, SummaryUser
from halfmq.services.credit.rules import CreditCommand
from halfmq.services.order.models import CANCELLED, CREATED, PAID, Order
from halfmq.services.order.repository import NewOrder


class DatabaseDown(Exception):
    """What a fake store raises while ``down`` is set."""


class KeyTaken(Exception):
    """What the fake store raises for an Idempotency-Key already stored (the real one: an IntegrityError)."""


class FakeOrderRepository:
    def __init__(self) -> None:
        self.orders: dict[str, Order] = {}
        self.keys: dict[str, tuple[str, str]] = {}  # Idempotency-Key -> (order id, fingerprint)
        self.down = False

    def insert(self, session: Session, new: NewOrder) -> Order:
        if self.down:
            raise DatabaseDown("the database is down")
        if new.idempotency_key is not None and new.idempotency_key in self.keys:
            raise KeyTaken(new.idempotency_key)
        order = Order(order_id=new.order_id, user_id=new.user_id, amount=new.amount, status="created", created_at=new.created_at)
        self.orders[new.order_id] = order
        if new.idempotency_key is not None:
            self.keys[new.idempotency_key] = (new.order_id, new.fingerprint)
        return order

    def mark_refunded(self, session: Session, order_id: str) -> bool:
        order = self.orders[order_id]
        if order.status == "refunded":
            return False
        self.orders[order_id] = Order(order_id=order.order_id, user_id=order.user_id, amount=order.amount, status="refunded",
                                      created_at=order.created_at)
        return True

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

    def pay(self, order_id: str, now: datetime) -> Order | None:
        order = self.orders.get(order_id)
        if order is not None and order.status == CREATED:
            order.status, order.paid_at = PAID, now
        return order

    def payment_fell_due(self, order_id: str, due_ms: int | None, seen_ms: int, released_ms: int | None = None) -> Order | None:
        order = self.orders.get(order_id)
        if order is not None and order.status == CREATED:
            order.status = CANCELLED
        if order is not None and order.payment_due_seen_ms is None:
            order.payment_due_ms, order.payment_due_seen_ms, order.payment_due_released_ms = due_ms, seen_ms, released_ms
        return order


_BROKER_STATE = {
    LocalTransactionState.COMMIT_MESSAGE: "committed",
    LocalTransactionState.ROLLBACK_MESSAGE: "rolled_back",
    LocalTransactionState.UNKNOW: "pending",
}


class FakeBarrier:
    """The SDK's barrier and its producer's broker: half, ``run`` with the record (all or nothing), end.

    ``down``: every call fails as an unreachable broker does. ``half_status``: what the half
    send answers (not SEND_OK: rolled back without running ``run``, as the SDK does).
    ``end_lost``: the end never arrives, so the transaction stays pending for the check-back.
    The fake store's writes are undone when ``run`` raises, as the database transaction is.
    """

    def __init__(self, repo: FakeOrderRepository) -> None:
        self.repo = repo
        self.down = False
        self.half_status = SendStatus.SEND_OK
        self.end_lost = False
        self.transactions: dict[str, dict[str, Any]] = {}
        self.records: dict[str, str] = {}  # business key -> transaction id
        self.sent: list[OutgoingMessage] = []
        self.also: dict[str, list[tuple[str, OutgoingMessage | Body]]] = {}  # business key -> the companions it was sent with

    async def send(self, producer: AsyncTransactionProducer, topic: str, message: OutgoingMessage | Body, business_key: str,
                   run: Callable[[Session], R], after_commit: AfterCommit | None = None, *, also: Also = ()) -> Sent[R]:
        if self.down:
            raise BrokerUnavailable("connection refused")
        assert isinstance(message, OutgoingMessage)
        transaction_id, msg_id = uuid.uuid4().hex, uuid.uuid4().hex
        half = HalfSendResult(status=self.half_status, transaction_id=transaction_id, msg_id=msg_id, commit_log_offset=0, queue_offset=0)
        seen = msgspec.structs.replace(message, properties={**message.properties, "TRANSACTION_ID": transaction_id})
        self.sent.append(seen)
        self.transactions[transaction_id] = {"transaction_id": transaction_id, "state": "rolled_back"}
        if self.half_status is not SendStatus.SEND_OK:
            raise HalfNotDurable(f"the broker answered {self.half_status.value}; the message was rolled back and nothing ran")
        before = (dict(self.repo.orders), dict(self.repo.keys))
        try:
            value = run(None)  # type: ignore[arg-type] - the fake store needs no session
            if business_key in self.records:
                raise DuplicateBusinessKey(business_key)
        except Exception:
            self.repo.orders, self.repo.keys = before
            raise
        self.records[business_key] = transaction_id
        self.also[business_key] = list(also)
        state = LocalTransactionState.COMMIT_MESSAGE
        if after_commit is not None and after_commit(value) is not None:
            state = LocalTransactionState.UNKNOW
        end_error = BrokerUnavailable("the end was lost") if self.end_lost else None
        self.transactions[transaction_id]["state"] = "pending" if end_error else _BROKER_STATE[state]
        result = TransactionSendResult(
            transaction_id=transaction_id, msg_id=msg_id, send_status=self.half_status, local_state=state, half=half,
            message=seen, end=None if end_error else self.transactions[transaction_id], end_error=end_error,
        )
        return Sent(value, result)

    def transaction_of(self, business_key: str) -> str | None:
        return self.records.get(business_key)

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
    """Credits by inbox key (the order id; a refund's is refund:{order id}); one already applied adds nothing (the real
    ledger's inbox). Each user's records are numbered in the order applied (``seq``), as the real ledger does."""

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
            new = cmd.inbox_key not in self.records
            if new:
                seq = 1 + sum(1 for r in self.records.values() if r.user_id == cmd.user_id)
                self.records[cmd.inbox_key] = CreditRecord(
                    id=len(self.records) + 1, order_id=cmd.order_id, user_id=cmd.user_id, amount=cmd.amount,
                    points=points, message_id=message_id, created_at=datetime.now(UTC), kind=cmd.event.value, seq=seq,
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

    def ledger(self, user_id: str, after_seq: int = 0, limit: int = 500) -> list[CreditRecord]:
        mine = sorted((r for r in self.records.values() if r.user_id == user_id and (r.seq or 0) > after_seq), key=lambda r: r.seq or 0)
        return mine[:limit]

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
