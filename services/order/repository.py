"""Order persistence: the one place SQL lives (the writes run in the barrier's session)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session, sessionmaker

from .models import IdempotencyKey, Order


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

    def insert(self, session: Session, new: NewOrder) -> Order:
        """The order and its Idempotency-Key, in the caller's transaction (the barrier's, with the record).

        Plain INSERTs: the ORM's unit of work cost more CPU per order than SQLite itself.
        """
        session.execute(Order.__table__.insert(), [
            {"order_id": new.order_id, "user_id": new.user_id, "amount": new.amount, "status": "created", "created_at": new.created_at}])
        if new.idempotency_key is not None:
            session.execute(IdempotencyKey.__table__.insert(), [
                {"key": new.idempotency_key, "order_id": new.order_id, "fingerprint": new.fingerprint, "created_at": new.created_at}])
        return Order(order_id=new.order_id, user_id=new.user_id, amount=new.amount, status="created", created_at=new.created_at)

    def get(self, order_id: str) -> Order | None:
        with self._sessions() as session:
            return session.get(Order, order_id)

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

    def count(self) -> int:
        with self._sessions() as session:
            return int(session.scalar(select(func.count()).select_from(Order)) or 0)

    def session(self) -> Session:
        return self._sessions()
