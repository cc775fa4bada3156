"""Tables of the credit service: the ledger, balances, the inbox, and the Spark job's published summaries."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal

from sqlalchemy import BigInteger, Date, Index, Integer, Numeric, String
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from halfmq.client.sqlalchemy.inbox import inbox_table

from ..database import UtcDateTime


class Base(DeclarativeBase):
    pass


class CreditRecord(Base):
    """One credit per order: the inbox row keyed by order_id, committed with it, decides (``repository``).

    ``id`` is a dense integer so Spark's JDBC source can partition reads on it.
    """

    __tablename__ = "credit_records"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    order_id: Mapped[str] = mapped_column(String(64), index=True)
    user_id: Mapped[str] = mapped_column(String(64), index=True)
    amount: Mapped[Decimal] = mapped_column(Numeric(14, 2))
    points: Mapped[int] = mapped_column(BigInteger)
    message_id: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    # What the message said happened to the order (``order_events.OrderEvent``): its credit, or its refund (negative points).
    kind: Mapped[str] = mapped_column(String(16), server_default="order")
    # The user's messages numbered in the order they were applied (1, 2, …; None for credits from before 0003):
    # a checker compares it with the order they were sent in.
    seq: Mapped[int | None] = mapped_column(BigInteger, nullable=True)

    __table_args__ = (Index("ix_credit_records_user_seq", "user_id", "seq"),)


# The SDK's inbox (halfmq.client.sqlalchemy.inbox): one row per order credited, per consumer group.
INBOX = inbox_table(Base.metadata)


class CreditAccount(Base):
    __tablename__ = "credit_accounts"

    user_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    balance: Mapped[int] = mapped_column(BigInteger)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime())
    # How many of the user's messages were applied: the last credit record's ``seq``.
    applied: Mapped[int] = mapped_column(BigInteger, server_default="0")


class SummaryRun(Base):
    """One Spark aggregation. Rows of a run become visible only when ``summary_current`` points at it."""

    __tablename__ = "summary_runs"

    run_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    computed_at: Mapped[datetime] = mapped_column(UtcDateTime())


class SummaryUser(Base):
    __tablename__ = "summary_users"

    run_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    points: Mapped[int] = mapped_column(BigInteger)
    orders: Mapped[int] = mapped_column(BigInteger)
    first_credit_at: Mapped[datetime] = mapped_column(UtcDateTime())
    last_credit_at: Mapped[datetime] = mapped_column(UtcDateTime())


class SummaryDay(Base):
    __tablename__ = "summary_days"

    run_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    day: Mapped[date] = mapped_column(Date, primary_key=True)
    points: Mapped[int] = mapped_column(BigInteger)
    orders: Mapped[int] = mapped_column(BigInteger)


class SummaryCurrent(Base):
    """A single row naming the published run: swapping it is the atomic publish."""

    __tablename__ = "summary_current"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[str] = mapped_column(String(64))
