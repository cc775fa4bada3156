"""the order service's transaction records move into the SDK barrier's table

order_transactions (transaction_id, order_id, created_at) becomes halfmq_transaction_records
(txid, business_key = order_id, created_at), the table the barrier writes and answers check-backs
from; existing rows are copied so a check-back for an order placed before the upgrade still
answers COMMIT.

Revision ID: 0002_barrier_records
Revises: 0001_orders
"""

import sqlalchemy as sa
from alembic import op

from halfmq.client.sqlalchemy.records import TABLE_NAME, create_transaction_records, drop_transaction_records

revision = "0002_barrier_records"
down_revision = "0001_orders"
branch_labels = None
depends_on = None


def upgrade() -> None:
    create_transaction_records(op)
    op.execute(f"INSERT INTO {TABLE_NAME} (txid, business_key, created_at) "
               "SELECT transaction_id, order_id, created_at FROM order_transactions")
    op.drop_table("order_transactions")


def downgrade() -> None:
    op.create_table(
        "order_transactions",
        sa.Column("transaction_id", sa.String(64), primary_key=True),
        sa.Column("order_id", sa.String(32), sa.ForeignKey("orders.order_id"), nullable=False, unique=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    # Only the records of orders that still exist (the old table had a foreign key to orders).
    op.execute(f"INSERT INTO order_transactions (transaction_id, order_id, created_at) "
               f"SELECT r.txid, r.business_key, r.created_at FROM {TABLE_NAME} r JOIN orders o ON o.order_id = r.business_key")
    drop_transaction_records(op)
