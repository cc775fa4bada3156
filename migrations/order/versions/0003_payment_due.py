"""an order's payment: when it was paid, and when its "payment due" message fell due and arrived

Each order's local transaction also sends a delayed "payment due" message (halfmq's ``also``); its consumer
cancels the order if it is still unpaid. ``payment_due_ms`` is the message's due time (the broker's
TIMER_OUT_MS), ``payment_due_seen_ms`` when it first arrived: the demo checks that none arrived early.

Revision ID: 0003_payment_due
Revises: 0002_barrier_records
"""

import sqlalchemy as sa
from alembic import op

revision = "0003_payment_due"
down_revision = "0002_barrier_records"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("orders", sa.Column("paid_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column("orders", sa.Column("payment_due_ms", sa.BigInteger(), nullable=True))
    op.add_column("orders", sa.Column("payment_due_seen_ms", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("orders") as batch:  # SQLite drops columns by copying the table
        batch.drop_column("payment_due_seen_ms")
        batch.drop_column("payment_due_ms")
        batch.drop_column("paid_at")
