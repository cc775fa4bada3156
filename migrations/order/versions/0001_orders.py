"""orders, their transaction records and idempotency keys

Revision ID: 0001_orders
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001_orders"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "orders",
        sa.Column("order_id", sa.String(32), primary_key=True),
        sa.Column("user_id", sa.String(64), nullable=False),
        sa.Column("amount", sa.Numeric(14, 2), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_orders_user_id", "orders", ["user_id"])
    op.create_table(
        "order_transactions",
        sa.Column("transaction_id", sa.String(64), primary_key=True),
        sa.Column("order_id", sa.String(32), sa.ForeignKey("orders.order_id"), nullable=False, unique=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "idempotency_keys",
        sa.Column("key", sa.String(255), primary_key=True),
        sa.Column("order_id", sa.String(32), sa.ForeignKey("orders.order_id"), nullable=False),
        sa.Column("fingerprint", sa.String(200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("idempotency_keys")
    op.drop_table("order_transactions")
    op.drop_index("ix_orders_user_id", table_name="orders")
    op.drop_table("orders")
