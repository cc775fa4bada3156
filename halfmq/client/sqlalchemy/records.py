"""The barrier's transaction records: one row per local transaction that committed.

A row is inserted in the same database transaction as the business change, so its presence
is the durable proof the check-back needs (``horizon``). ``business_key`` is unique: a second
local transaction for the same business change fails on insert and rolls back, so a key is
committed (and its message delivered) at most once.

The table is plain SQLAlchemy Core, so it lives in any ``MetaData`` (the service's own, for its
Alembic autogenerate) and needs no ORM base. From a migration::

    from halfmq.client.sqlalchemy.records import create_transaction_records, drop_transaction_records

    def upgrade() -> None:
        create_transaction_records(op)

    def downgrade() -> None:
        drop_transaction_records(op)
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Column, Connection, DateTime, Engine, Index, MetaData, String, Table
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator

__all__ = ["TABLE_NAME", "UtcTimestamp", "create_transaction_records", "drop_transaction_records", "transaction_records_table"]

TABLE_NAME = "halfmq_transaction_records"


class UtcTimestamp(TypeDecorator[datetime]):
    """Aware UTC datetimes in and out (SQLite stores them without an offset)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        """Refuse a naive datetime: stored without its offset, it would read back as another instant."""
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime: use datetime.now(UTC)")
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        """Aware UTC, whatever the driver returns (SQLite hands back naive values)."""
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _columns() -> list[Any]:
    return [
        Column("txid", String(64), primary_key=True),
        Column("business_key", String(255), nullable=False, unique=True),
        Column("created_at", UtcTimestamp(), nullable=False),
    ]


def transaction_records_table(metadata: MetaData) -> Table:
    """The records table in ``metadata`` (the same Table if it is there already)."""
    if TABLE_NAME in metadata.tables:
        return metadata.tables[TABLE_NAME]
    table = Table(TABLE_NAME, metadata, *_columns())
    # Cleanup deletes the oldest rows first.
    Index(f"ix_{TABLE_NAME}_created_at", table.c.created_at)
    return table


def create_transaction_records(target: Any) -> None:
    """Create the table: from an Alembic migration (``create_transaction_records(op)``, ``op`` being
    ``alembic.op``, which the SDK does not import), or on an engine or connection for a service
    without migrations (then only if it does not exist yet)."""
    if isinstance(target, Engine | Connection):
        transaction_records_table(MetaData()).create(target, checkfirst=True)
        return
    target.create_table(TABLE_NAME, *_columns())
    target.create_index(f"ix_{TABLE_NAME}_created_at", TABLE_NAME, ["created_at"])


def drop_transaction_records(op: Any) -> None:
    """Drop the table from an Alembic migration's downgrade (``op``: ``alembic.op``)."""
    op.drop_index(f"ix_{TABLE_NAME}_created_at", table_name=TABLE_NAME)
    op.drop_table(TABLE_NAME)
