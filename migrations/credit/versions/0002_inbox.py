"""the inbox decides one credit per order: halfmq_inbox filled from the ledger, credit_records.order_id no longer unique

Revision ID: 0002_inbox
Revises: 0001_credits

The consumer group of the existing rows is the service's configured one (CREDIT_CONSUMER_GROUP),
the group that credited them. The unique constraint on order_id becomes a plain index: the
inbox row, committed in the same transaction as the credit, is what keeps a redelivery out.
"""

import sqlalchemy as sa
from alembic import op

from halfmq.client.sqlalchemy.inbox import create_inbox_table, drop_inbox_table
from halfmq.services.credit.config import CreditSettings

revision = "0002_inbox"
down_revision = "0001_credits"
branch_labels = None
depends_on = None


def _records(unique: bool) -> sa.Table:
    """credit_records as 0001 made it, with or without the unique order_id (SQLite's batch mode copies from this)."""
    return sa.Table(
        "credit_records", sa.MetaData(),
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("order_id", sa.String(64), nullable=False, unique=unique),
        sa.Column("user_id", sa.String(64), nullable=False),
        sa.Column("amount", sa.Numeric(14, 2), nullable=False),
        sa.Column("points", sa.BigInteger, nullable=False),
        sa.Column("message_id", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Index("ix_credit_records_user_id", "user_id"),
    )


def upgrade() -> None:
    create_inbox_table(op)
    op.execute(sa.text(
        "INSERT INTO halfmq_inbox (consumer_group, \"key\", msg_id, handled_at) "
        "SELECT :group_name, order_id, message_id, created_at FROM credit_records"
    ).bindparams(group_name=CreditSettings().consumer_group))
    if op.get_bind().dialect.name == "sqlite":
        with op.batch_alter_table("credit_records", copy_from=_records(unique=False), recreate="always"):
            pass
    else:
        op.drop_constraint("credit_records_order_id_key", "credit_records", type_="unique")
    op.create_index("ix_credit_records_order_id", "credit_records", ["order_id"])


def downgrade() -> None:
    op.drop_index("ix_credit_records_order_id", table_name="credit_records")
    if op.get_bind().dialect.name == "sqlite":
        with op.batch_alter_table("credit_records", copy_from=_records(unique=True), recreate="always"):
            pass
    else:
        op.create_unique_constraint("credit_records_order_id_key", "credit_records", ["order_id"])
    drop_inbox_table(op)
