"""refunds and the order credits were applied in: credit_records.kind and .seq, credit_accounts.applied

Revision ID: 0003_apply_order
Revises: 0002_inbox

A credit record says what the message said (``kind``: order, or refund with negative points) and its
place in its user's sequence of applied messages (``seq``), so a checker can compare the order messages
were applied in with the order they were sent in. ``credit_accounts.applied`` counts each user's applied
messages (the last ``seq``). Existing records keep ``seq`` NULL (their order was not recorded); their
users' counts start from how many records they have, so new numbers follow.
"""

import sqlalchemy as sa
from alembic import op

revision = "0003_apply_order"
down_revision = "0002_inbox"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("credit_records") as records:
        records.add_column(sa.Column("kind", sa.String(16), nullable=False, server_default="order"))
        records.add_column(sa.Column("seq", sa.BigInteger, nullable=True))
    op.create_index("ix_credit_records_user_seq", "credit_records", ["user_id", "seq"])
    with op.batch_alter_table("credit_accounts") as accounts:
        accounts.add_column(sa.Column("applied", sa.BigInteger, nullable=False, server_default="0"))
    op.execute(sa.text(
        "UPDATE credit_accounts SET applied = "
        "(SELECT COUNT(*) FROM credit_records WHERE credit_records.user_id = credit_accounts.user_id)"
    ))


def downgrade() -> None:
    with op.batch_alter_table("credit_accounts") as accounts:
        accounts.drop_column("applied")
    op.drop_index("ix_credit_records_user_seq", table_name="credit_records")
    with op.batch_alter_table("credit_records") as records:
        records.drop_column("seq")
        records.drop_column("kind")
