"""Tables of the order service. Amounts are exact decimals, never floats."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from sqlalchemy import BigInteger, ForeignKey, Numeric, String
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from halfmq.client.sqlalchemy.records import transaction_records_table

from ..database import UtcDateTime

CREATED, PAID, CANCELLED = "created", "paid", "cancelled"  # an order's status: placed (unpaid), paid, cancelled unpaid


class Base(DeclarativeBase):
    pass


class Order(Base):
    __tablename__ = "orders"

    order_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    user_id: Mapped[str] = mapped_column(String(64), index=True)
    amount: Mapped[Decimal] = mapped_column(Numeric(14, 2))
    status: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    # Its payment (migration 0003): paid, or its delayed "payment due" message's due time and first arrival (epoch ms).
    paid_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True, default=None)
    payment_due_ms: Mapped[int | None] = mapped_column(BigInteger, nullable=True, default=None)
    payment_due_seen_ms: Mapped[int | None] = mapped_column(BigInteger, nullable=True, default=None)
    # When the broker released it (the released message's store time; migration 0004): due -> released -> seen.
    payment_due_released_ms: Mapped[int | None] = mapped_column(BigInteger, nullable=True, default=None)


class IdempotencyKey(Base):
    __tablename__ = "idempotency_keys"

    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    order_id: Mapped[str] = mapped_column(ForeignKey("orders.order_id"))
    fingerprint: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())


# The barrier's records (the SDK owns them), in this metadata so that Alembic sees the table.
transaction_records_table(Base.metadata)
