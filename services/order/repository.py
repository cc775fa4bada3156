"""Order persistence: the one place SQL lives (the writes run in the barrier's session)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from sqlalchemy import Engine, event, func, select, update
from sqlalchemy.orm import Session, SessionTransaction, sessionmaker

from .models import CANCELLED, CREATED, PAID, IdempotencyKey, Order
from .rules import REFUNDED


@dataclass(frozen=True)
class NewOrder:
    order_id: str
    user_id: str
    amount: Decimal
    created_at: datetime
    idempotency_key: str | None = None
    fingerprint: str = ""


# The rows a session's orders still have to write at its commit: (orders, idempotency keys).
_PENDING = "halfmq.order.pending_rows"
_LISTENING = "halfmq.order.writes_at_commit"


def _write_pending(session: Session) -> None:
    """At commit, each table's rows as ONE executemany (the barrier's whole batch in a statement or two)."""
    orders, keys = session.info.pop(_PENDING, ([], []))
    if orders:
        session.execute(Order.__table__.insert(), orders)
    if keys:
        session.execute(IdempotencyKey.__table__.insert(), keys)


def _drop_pending(session: Session, transaction: SessionTransaction) -> None:
    """A transaction that ends without its commit (rolled back) takes its unwritten rows with it."""
    if transaction.parent is None:
        session.info.pop(_PENDING, None)


def _pending_rows(session: Session) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    pending = session.info.get(_PENDING)
    if pending is None:
        pending = session.info[_PENDING] = ([], [])
        if not session.info.get(_LISTENING):
            session.info[_LISTENING] = True
            event.listen(session, "before_commit", _write_pending)
            event.listen(session, "after_transaction_end", _drop_pending)
    return pending


class OrderRepository:
    def __init__(self, engine: Engine) -> None:
        self._sessions = sessionmaker(engine, expire_on_commit=False)

    def insert(self, session: Session, new: NewOrder) -> Order:
        """The order and its Idempotency-Key, in the caller's transaction (the barrier's, with the record).

        Plain INSERTs: the ORM's unit of work cost more CPU per order than SQLite itself. They
        are written when the transaction commits, all the orders of the session together: the
        barrier's group commit runs up to 64 orders in one session, and an INSERT each was 64
        sequential round trips to PostgreSQL per transaction (the order service's writer thread
        spent most of its time waiting on them). A failure (a taken Idempotency-Key) still fails
        the commit, so the transaction and everything in it rolls back as before.
        """
        orders, keys = _pending_rows(session)
        orders.append({"order_id": new.order_id, "user_id": new.user_id, "amount": new.amount, "status": "created",
                       "created_at": new.created_at})
        if new.idempotency_key is not None:
            keys.append({"key": new.idempotency_key, "order_id": new.order_id, "fingerprint": new.fingerprint,
                         "created_at": new.created_at})
        return Order(order_id=new.order_id, user_id=new.user_id, amount=new.amount, status="created", created_at=new.created_at)

    def mark_refunded(self, session: Session, order_id: str) -> bool:
        """The order's status becomes refunded in the caller's transaction (the refund's, with its record); False if it was already."""
        refunded = update(Order).where(Order.order_id == order_id, Order.status != REFUNDED).values(status=REFUNDED)
        return bool(session.execute(refunded, execution_options={"synchronize_session": False}).rowcount)

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

    # --- payment (payments.py): conditional updates, so a payment and a cancel never both win ------------------------
    def pay(self, order_id: str, now: datetime) -> Order | None:
        """Mark the order paid if it is still unpaid; the order as it is then (paid, or cancelled first), or None."""
        with self._sessions.begin() as session:
            session.execute(update(Order).where(Order.order_id == order_id, Order.status == CREATED).values(status=PAID, paid_at=now))
            return session.get(Order, order_id)

    def payment_fell_due(self, order_id: str, due_ms: int | None, seen_ms: int, released_ms: int | None = None) -> Order | None:
        """Cancel the order if it is still unpaid, and record its payment-due message's due time, release and first arrival."""
        with self._sessions.begin() as session:
            session.execute(update(Order).where(Order.order_id == order_id, Order.status == CREATED).values(status=CANCELLED))
            session.execute(update(Order).where(Order.order_id == order_id, Order.payment_due_seen_ms.is_(None))
                            .values(payment_due_ms=due_ms, payment_due_seen_ms=seen_ms, payment_due_released_ms=released_ms))
            return session.get(Order, order_id)
