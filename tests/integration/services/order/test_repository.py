"""The order tables on SQLite and a real PostgreSQL: the order's writes in one transaction, idempotency, migrations."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from sqlalchemy import event, inspect, text
from sqlalchemy.exc import IntegrityError

from halfmq.services.database import create_db_engine, downgrade, is_migrated, migrate
from halfmq.services.order.repository import NewOrder, OrderRepository


@pytest.fixture
def engine(database_url: str):
    engine = create_db_engine(database_url, pool_size=10)
    migrate("order", engine)
    yield engine
    engine.dispose()


@pytest.fixture
def repo(engine) -> OrderRepository:
    return OrderRepository(engine)


def new_order(key: str | None = None, amount: str = "12.50") -> NewOrder:
    return NewOrder(uuid.uuid4().hex, "u-1", Decimal(amount), datetime.now(UTC), key, f"u-1|{amount}")


def place(repo: OrderRepository, order: NewOrder) -> None:
    with repo.session() as session, session.begin():
        repo.insert(session, order)


def test_an_order_and_its_key_are_written_in_the_callers_transaction(repo: OrderRepository) -> None:
    order = new_order(key="k-1")
    place(repo, order)
    stored = repo.get(order.order_id)
    assert stored is not None and stored.amount == Decimal("12.50") and stored.status == "created"
    found = repo.by_idempotency_key("k-1")
    assert found is not None and found[0].order_id == order.order_id and found[1] == "u-1|12.50"


def test_a_failure_before_commit_leaves_neither_order_nor_key(repo: OrderRepository) -> None:
    order = new_order(key="k-2")
    with pytest.raises(RuntimeError), repo.session() as session, session.begin():
        repo.insert(session, order)
        raise RuntimeError("boom")
    assert repo.get(order.order_id) is None and repo.by_idempotency_key("k-2") is None


def test_a_taken_idempotency_key_fails_the_insert(repo: OrderRepository) -> None:
    place(repo, new_order(key="k-3"))
    second = new_order(key="k-3")
    with pytest.raises(IntegrityError):
        place(repo, second)
    assert repo.get(second.order_id) is None


def test_amounts_are_stored_exactly(repo: OrderRepository) -> None:
    order = new_order(amount="0.10")
    place(repo, order)
    assert repo.get(order.order_id).amount == Decimal("0.10")


def test_orders_of_a_user_page_in_creation_order(repo: OrderRepository) -> None:
    ids = []
    for _ in range(5):
        order = new_order()
        place(repo, order)
        ids.append(order.order_id)
    first, second = repo.by_user("u-1", 3, 0), repo.by_user("u-1", 3, 3)
    assert [o.order_id for o in first + second] == ids
    assert repo.count() == 5


def test_migrations_upgrade_from_empty_downgrade_and_upgrade_again(database_url: str) -> None:
    engine = create_db_engine(database_url)
    try:
        assert not is_migrated("order", engine)
        migrate("order", engine)
        assert is_migrated("order", engine)
        tables = set(inspect(engine).get_table_names())
        assert {"orders", "halfmq_transaction_records", "idempotency_keys"} <= tables and "order_transactions" not in tables
        downgrade("order", engine, "base")
        assert not {"orders", "order_transactions", "halfmq_transaction_records", "idempotency_keys"} & set(inspect(engine).get_table_names())
        migrate("order", engine)
        assert is_migrated("order", engine)
    finally:
        engine.dispose()


def test_the_barrier_migration_moves_existing_transaction_records_and_back(database_url: str) -> None:
    engine = create_db_engine(database_url)
    at = datetime(2026, 11, 1, tzinfo=UTC)
    try:
        migrate("order", engine, "0001_orders")
        with engine.begin() as conn:
            conn.execute(text("INSERT INTO orders (order_id, user_id, amount, status, created_at) VALUES ('o-1', 'u', 1, 'created', :at)"), {"at": at})
            conn.execute(text("INSERT INTO order_transactions (transaction_id, order_id, created_at) VALUES ('tx-1', 'o-1', :at)"), {"at": at})
        migrate("order", engine)
        with engine.connect() as conn:
            assert conn.execute(text("SELECT txid, business_key FROM halfmq_transaction_records")).all() == [("tx-1", "o-1")]
        assert "order_transactions" not in inspect(engine).get_table_names()
        downgrade("order", engine, "0001_orders")
        with engine.connect() as conn:
            assert conn.execute(text("SELECT transaction_id, order_id FROM order_transactions")).all() == [("tx-1", "o-1")]
        assert "halfmq_transaction_records" not in inspect(engine).get_table_names()
    finally:
        engine.dispose()


def test_a_rolled_back_transaction_leaves_nothing_for_the_sessions_next_commit(repo: OrderRepository) -> None:
    dropped, kept = new_order(key="k-4"), new_order(key="k-5")
    with repo.session() as session:
        with session.begin():
            repo.insert(session, dropped)
            session.rollback()
        with session.begin():
            repo.insert(session, kept)
    assert repo.get(dropped.order_id) is None and repo.by_idempotency_key("k-4") is None
    assert repo.get(kept.order_id) is not None and repo.by_idempotency_key("k-5") is not None


def test_the_orders_of_one_transaction_are_written_together_at_its_commit(repo: OrderRepository, engine) -> None:
    orders = [new_order(key=f"k-batch-{i}") for i in range(5)]
    statements: list[str] = []

    def seen(conn, cursor, statement, parameters, context, executemany) -> None:
        statements.append(statement.split("(")[0].strip())

    event.listen(engine, "before_cursor_execute", seen)
    try:
        with repo.session() as session, session.begin():
            for order in orders:
                repo.insert(session, order)
    finally:
        event.remove(engine, "before_cursor_execute", seen)
    assert [s for s in statements if s.startswith("INSERT")] == ["INSERT INTO orders", "INSERT INTO idempotency_keys"]
    assert all(repo.get(o.order_id) is not None for o in orders)
