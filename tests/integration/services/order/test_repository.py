"""The order tables on SQLite and a real PostgreSQL: one local transaction, idempotency, migrations."""

from __future__ import annotations

import threading
import uuid
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from sqlalchemy import inspect, select
from sqlalchemy.exc import IntegrityError

from halfmq.services.database import create_db_engine, downgrade, is_migrated, migrate
from halfmq.services.order.models import OrderTransaction
from halfmq.services.order.repository import IdempotencyKeyTaken, NewOrder, OrderRepository


@pytest.fixture
def repo(database_url: str):
    engine = create_db_engine(database_url, pool_size=10)
    migrate("order", engine)
    yield OrderRepository(engine)
    engine.dispose()


def new_order(key: str | None = None, amount: str = "12.50") -> NewOrder:
    return NewOrder(uuid.uuid4().hex, "u-1", Decimal(amount), datetime.now(UTC), key, f"u-1|{amount}")


def test_order_and_its_transaction_record_commit_together(repo: OrderRepository) -> None:
    order = new_order()
    repo.create(order, "tx-1")
    stored = repo.get(order.order_id)
    assert stored is not None and stored.amount == Decimal("12.50") and stored.status == "created"
    assert repo.transaction_of(order.order_id) == "tx-1"


def test_a_failure_before_commit_leaves_neither_order_nor_transaction_record(repo: OrderRepository) -> None:
    order = new_order()
    with pytest.raises(RuntimeError):
        repo.create(order, "tx-2", fail_before_commit=RuntimeError("boom"))
    assert repo.get(order.order_id) is None
    with repo.session() as s:
        assert s.scalar(select(OrderTransaction).where(OrderTransaction.transaction_id == "tx-2")) is None


def test_duplicate_transaction_record_rolls_the_whole_order_back(repo: OrderRepository) -> None:
    repo.create(new_order(), "tx-dup")
    second = new_order()
    with pytest.raises(IntegrityError):
        repo.create(second, "tx-dup")
    assert repo.get(second.order_id) is None


def test_amounts_are_stored_exactly(repo: OrderRepository) -> None:
    order = new_order(amount="0.10")
    repo.create(order, "tx-3")
    assert repo.get(order.order_id).amount == Decimal("0.10")


def test_idempotency_key_holds_under_concurrent_retries(repo: OrderRepository) -> None:
    winners, taken, errors = [], [], []
    barrier = threading.Barrier(8)

    def attempt(i: int) -> None:
        order = new_order(key="key-1")
        barrier.wait(10)
        try:
            repo.create(order, f"tx-c{i}")
            winners.append(order.order_id)
        except IdempotencyKeyTaken:
            taken.append(i)
        except Exception as exc:  # noqa: BLE001
            errors.append(repr(exc))

    threads = [threading.Thread(target=attempt, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert errors == []
    assert len(winners) == 1 and len(taken) == 7
    order, _ = repo.by_idempotency_key("key-1")
    assert order.order_id == winners[0]
    assert len(repo.by_user("u-1", 100, 0)) == 1


def test_orders_of_a_user_page_in_creation_order(repo: OrderRepository) -> None:
    ids = []
    for _ in range(5):
        order = new_order()
        repo.create(order, uuid.uuid4().hex)
        ids.append(order.order_id)
    first, second = repo.by_user("u-1", 3, 0), repo.by_user("u-1", 3, 3)
    assert [o.order_id for o in first + second] == ids


def test_migrations_upgrade_from_empty_downgrade_and_upgrade_again(database_url: str) -> None:
    engine = create_db_engine(database_url)
    try:
        assert not is_migrated("order", engine)
        migrate("order", engine)
        assert is_migrated("order", engine)
        assert {"orders", "order_transactions", "idempotency_keys"} <= set(inspect(engine).get_table_names())
        downgrade("order", engine, "base")
        assert not {"orders", "order_transactions", "idempotency_keys"} & set(inspect(engine).get_table_names())
        migrate("order", engine)
        assert is_migrated("order", engine)
    finally:
        engine.dispose()


def test_a_group_commit_stores_every_order_with_its_transaction_record(repo: OrderRepository) -> None:
    orders = [new_order() for _ in range(5)]
    outcomes = repo.create_many([(o, f"tx-g{i}") for i, o in enumerate(orders)])
    assert [o.order_id for o in outcomes] == [o.order_id for o in orders]
    assert [repo.transaction_of(o.order_id) for o in orders] == [f"tx-g{i}" for i in range(5)]


def test_one_conflict_in_a_group_commit_fails_that_order_only(repo: OrderRepository) -> None:
    repo.create(new_order(key="key-g"), "tx-first")
    clash, fine = new_order(key="key-g"), [new_order(key="key-h"), new_order()]
    outcomes = repo.create_many([(fine[0], "tx-a"), (clash, "tx-b"), (fine[1], "tx-c")])
    assert isinstance(outcomes[1], IdempotencyKeyTaken)
    assert [outcomes[0].order_id, outcomes[2].order_id] == [o.order_id for o in fine]
    assert repo.get(clash.order_id) is None and repo.transaction_of(fine[1].order_id) == "tx-c"
