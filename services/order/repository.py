"""Order persistence: the one place SQL lives (a unit of work per local transaction)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from sqlalchemy import Engine, exists, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from .models import IdempotencyKey, Order, OrderTransaction


class IdempotencyKeyTaken(Exception):
    """Another request with the same Idempotency-Key committed first."""


@dataclass(frozen=True)
class NewOrder:
    order_id: str
    user_id: str
    amount: Decimal
    created_at: datetime
    idempotency_key: str | None = None
    fingerprint: str = ""


class OrderRepository:
    def __init__(self, engine: Engine) -> None:
        self._sessions = sessionmaker(engine, expire_on_commit=False)

    def create(self, new: NewOrder, transaction_id: str, *, fail_before_commit: Exception | None = None) -> Order:
        """Insert the order, its transaction record and its idempotency key in ONE database transaction."""
        order = Order(order_id=new.order_id, user_id=new.user_id, amount=new.amount, status="created", created_at=new.created_at)
        try:
            with self._sessions.begin() as session:
                session.add(order)
                session.flush()
                session.add(OrderTransaction(transaction_id=transaction_id, order_id=new.order_id, created_at=new.created_at))
                if new.idempotency_key is not None:
                    session.add(IdempotencyKey(key=new.idempotency_key, order_id=new.order_id, fingerprint=new.fingerprint, created_at=new.created_at))
                session.flush()
                if fail_before_commit is not None:
                    raise fail_before_commit
        except IntegrityError as exc:
            if new.idempotency_key is not None and self.by_idempotency_key(new.idempotency_key) is not None:
                raise IdempotencyKeyTaken(new.idempotency_key) from exc
            raise
        return order

    def get(self, order_id: str) -> Order | None:
        with self._sessions() as session:
            return session.get(Order, order_id)

    def exists(self, order_id: str) -> bool:
        with self._sessions() as session:
            return bool(session.scalar(select(exists().where(Order.order_id == order_id))))

    def by_user(self, user_id: str, limit: int, offset: int) -> list[Order]:
        with self._sessions() as session:
            query = select(Order).where(Order.user_id == user_id).order_by(Order.created_at, Order.order_id).limit(limit).offset(offset)
            return list(session.scalars(query))

    def by_idempotency_key(self, key: str) -> tuple[Order, str] | None:
        with self._sessions() as session:
            row = session.get(IdempotencyKey, key)
            if row is None:
                return None
            return session.get(Order, row.order_id), row.fingerprint

    def transaction_of(self, order_id: str) -> str | None:
        with self._sessions() as session:
            return session.scalar(select(OrderTransaction.transaction_id).where(OrderTransaction.order_id == order_id))

    def count(self) -> int:
        from sqlalchemy import func

        with self._sessions() as session:
            return int(session.scalar(select(func.count()).select_from(Order)) or 0)

    def session(self) -> Session:
        return self._sessions()
