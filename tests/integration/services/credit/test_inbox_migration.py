"""Migration 0002_inbox on SQLite and PostgreSQL: a ledger credited before the inbox keeps every order credited once."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest
from sqlalchemy import inspect, select

from halfmq.services.credit.models import INBOX, CreditRecord
from halfmq.services.credit.repository import CreditRepository
from halfmq.services.credit.rules import CreditCommand
from halfmq.services.database import create_db_engine, downgrade, migrate


@pytest.fixture
def engine(database_url: str):
    engine = create_db_engine(database_url, pool_size=5)
    yield engine
    engine.dispose()


def unique_order_id(engine) -> bool:
    uniques = inspect(engine).get_unique_constraints("credit_records")
    indexes = inspect(engine).get_indexes("credit_records")
    return any(u["column_names"] == ["order_id"] for u in uniques) or any(
        i["column_names"] == ["order_id"] and i["unique"] for i in indexes)


def test_the_inbox_is_filled_from_the_ledger_and_the_unique_order_id_goes_and_comes_back(engine) -> None:
    migrate("credit", engine, "0001_credits")
    at = datetime(2026, 11, 1, tzinfo=UTC)
    with engine.begin() as conn:
        conn.execute(CreditRecord.__table__.insert(), [
            {"order_id": "o-old", "user_id": "u1", "amount": Decimal("5.00"), "points": 5, "message_id": "m-old", "created_at": at}])
    assert unique_order_id(engine)

    migrate("credit", engine)
    with engine.connect() as conn:
        rows = conn.execute(select(INBOX.c.consumer_group, INBOX.c.key, INBOX.c.msg_id)).all()
    assert [tuple(r) for r in rows] == [("credit_group", "o-old", "m-old")]
    assert not unique_order_id(engine)
    repo = CreditRepository(engine)
    assert repo.apply(CreditCommand("o-old", "u1", Decimal("5.00")), 5, "m-old-redelivered") is False
    assert repo.apply(CreditCommand("o-new", "u1", Decimal("2.00")), 2, "m-new") is True
    assert repo.account("u1")[2] == 2

    downgrade("credit", engine, "0001_credits")
    assert unique_order_id(engine) and "halfmq_inbox" not in inspect(engine).get_table_names()
    with engine.connect() as conn:
        assert sorted(conn.scalars(select(CreditRecord.order_id))) == ["o-new", "o-old"]
