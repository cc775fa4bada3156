"""credit ledger, balances and published summaries

Revision ID: 0001_credits
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001_credits"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "credit_records",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("order_id", sa.String(64), nullable=False, unique=True),
        sa.Column("user_id", sa.String(64), nullable=False),
        sa.Column("amount", sa.Numeric(14, 2), nullable=False),
        sa.Column("points", sa.BigInteger, nullable=False),
        sa.Column("message_id", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_credit_records_user_id", "credit_records", ["user_id"])
    op.create_table(
        "credit_accounts",
        sa.Column("user_id", sa.String(64), primary_key=True),
        sa.Column("balance", sa.BigInteger, nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "summary_runs",
        sa.Column("run_id", sa.String(64), primary_key=True),
        sa.Column("computed_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "summary_users",
        sa.Column("run_id", sa.String(64), primary_key=True),
        sa.Column("user_id", sa.String(64), primary_key=True),
        sa.Column("points", sa.BigInteger, nullable=False),
        sa.Column("orders", sa.BigInteger, nullable=False),
        sa.Column("first_credit_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_credit_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "summary_days",
        sa.Column("run_id", sa.String(64), primary_key=True),
        sa.Column("day", sa.Date, primary_key=True),
        sa.Column("points", sa.BigInteger, nullable=False),
        sa.Column("orders", sa.BigInteger, nullable=False),
    )
    op.create_table(
        "summary_current",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("run_id", sa.String(64), nullable=False),
    )


def downgrade() -> None:
    for table in ("summary_current", "summary_days", "summary_users", "summary_runs", "credit_accounts"):
        op.drop_table(table)
    op.drop_index("ix_credit_records_user_id", table_name="credit_records")
    op.drop_table("credit_records")
