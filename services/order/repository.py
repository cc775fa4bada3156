"""Order persistence: the one place SQL lives (a unit of work per local transaction, or per group commit)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from sqlalchemy import Engine, exists, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from ..database import WriteSessions, together_or_each_alone
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


def _order(new: NewOrder) -> Order:
    """The row as committed (a detached Order; no read back needed)."""
    return Order(order_id=new.order_id, user_id=new.user_id, amount=new.amount, status="created", created_at=new.created_at)


class OrderRepository:
    def __init__(self, engine: Engine) -> None:
        self._sessions = sessionmaker(engine, expire_on_commit=False)
        self._writes = WriteSessions(engine)

    def create(self, new: NewOrder, transaction_id: str, *, fail_before_commit: Exception | None = None) -> Order:
        """Insert the order, its transaction record and its idempotency key in ONE database transaction."""
        try:
            with self._writes.begin() as session:
                self._insert(session, [(new, transaction_id)])
                if fail_before_commit is not None:
                    raise fail_before_commit
        except IntegrityError as exc:
            if new.idempotency_key is not None and self.by_idempotency_key(new.idempotency_key) is not None:
                raise IdempotencyKeyTaken(new.idempotency_key) from exc
            raise
        return _order(new)

    def create_many(self, batch: list[tuple[NewOrder, str]]) -> list[Order | Exception]:
        """Several local transactions' orders (each with its transaction id) in ONE database transaction.

        The group commit's batch function (``services.group_commit``): each order's row,
        transaction record and idempotency key still commit together, and a result is
        returned only after the commit. If the batch cannot commit as a whole because of one
        order's data (its Idempotency-Key is taken, a transaction id repeats), nothing of it is
        kept and every order is redone in its own ``create``, so the conflict fails that order
        only. Any other error (the database is down) fails the whole batch.
        """
        return together_or_each_alone(batch, self._create_together, lambda item: self.create(*item))

    def _create_together(self, batch: list[tuple[NewOrder, str]]) -> list[Order]:
        with self._writes.begin() as session:
            self._insert(session, batch)
        return [_order(new) for new, _ in batch]

    @staticmethod
    def _insert(session: Session, batch: list[tuple[NewOrder, str]]) -> None:
        # Plain executemany INSERTs, orders first for the foreign keys: the ORM's unit of
        # work cost more CPU per order than SQLite itself.
        session.execute(Order.__table__.insert(), [
            {"order_id": new.order_id, "user_id": new.user_id, "amount": new.amount, "status": "created", "created_at": new.created_at}
            for new, _ in batch
        ])
        session.execute(OrderTransaction.__table__.insert(), [
            {"transaction_id": transaction_id, "order_id": new.order_id, "created_at": new.created_at} for new, transaction_id in batch
        ])
        keys = [{"key": new.idempotency_key, "order_id": new.order_id, "fingerprint": new.fingerprint, "created_at": new.created_at}
                for new, _ in batch if new.idempotency_key is not None]
        if keys:
            session.execute(IdempotencyKey.__table__.insert(), keys)

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
