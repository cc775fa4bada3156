"""Migration 0003_apply_order on SQLite and PostgreSQL: credits from before it keep counting, new ones are numbered after them."""

from __future__ import annotations

from decimal import Decimal

import pytest
from sqlalchemy import inspect, text

from halfmq.services.credit.repository import CreditRepository
from halfmq.services.credit.rules import CreditCommand
from halfmq.services.database import create_db_engine, downgrade, migrate
from halfmq.services.order_events import OrderEvent


@pytest.fixture
def engine(database_url: str):
    engine = create_db_engine(database_url, pool_size=5)
    yield engine
    engine.dispose()


def test_old_credits_count_in_the_users_sequence_and_a_refund_is_numbered_after_them(engine) -> None:
    migrate("credit", engine, "0002_inbox")
    at = "2026-11-01 00:00:00"  # as both databases read a timestamp back
    with engine.begin() as conn:  # the tables as 0002 left them (the models have the columns 0003 adds)
        conn.execute(text("INSERT INTO credit_records (order_id, user_id, amount, points, message_id, created_at) "
                          "VALUES ('o-old', 'u1', 5.00, 5, 'm-old', :at)"), {"at": at})
        conn.execute(text("INSERT INTO credit_accounts (user_id, balance, updated_at) VALUES ('u1', 5, :at)"), {"at": at})

    migrate("credit", engine)
    repo = CreditRepository(engine)
    assert repo.apply(CreditCommand("o-old", "u1", Decimal("5.00"), OrderEvent.REFUND), -5, "m-refund") is True
    account, records, total = repo.account("u1")
    assert (account.balance, account.applied, total) == (0, 2, 2)
    assert [(r.order_id, r.kind, r.points, r.seq) for r in records] == [("o-old", "refund", -5, 2), ("o-old", "order", 5, None)]
    assert [r.seq for r in repo.ledger("u1")] == [2]

    downgrade("credit", engine, "0002_inbox")
    assert "seq" not in {c["name"] for c in inspect(engine).get_columns("credit_records")}
    assert "applied" not in {c["name"] for c in inspect(engine).get_columns("credit_accounts")}
