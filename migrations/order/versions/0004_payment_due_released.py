"""when the broker released an order's "payment due" message, beside when it fell due and when it arrived

``payment_due_released_ms`` is the released message's store time (the broker's timer wrote it to the topic then):
with it the demo tells the broker's lateness (released - due) from the order service's own (arrived - released:
its consumer's queue, a burst of payments falling due together handled a few at a time).

Revision ID: 0004_payment_due_released
Revises: 0003_payment_due
"""

import sqlalchemy as sa
from alembic import op

revision = "0004_payment_due_released"
down_revision = "0003_payment_due"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("orders", sa.Column("payment_due_released_ms", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("orders") as batch:  # SQLite drops columns by copying the table
        batch.drop_column("payment_due_released_ms")
