"""The credit ledger on SQLite and a real PostgreSQL: one credit per order, whatever the deliveries."""

from __future__ import annotations

import threading
from decimal import Decimal

import pytest
from sqlalchemy import func, select

from halfmq.services.credit.models import CreditRecord
from halfmq.services.credit.repository import CreditRepository
from halfmq.services.credit.rules import CreditCommand
from halfmq.services.database import create_db_engine, migrate


@pytest.fixture
def repo(database_url: str):
    engine = create_db_engine(database_url, pool_size=10)
    migrate("credit", engine)
    yield CreditRepository(engine)
    engine.dispose()


def test_credit_inserts_a_record_and_raises_the_balance(repo: CreditRepository) -> None:
    assert repo.apply(CreditCommand("o1", "u1", Decimal("12.50")), 12, "m1") is True
    assert repo.apply(CreditCommand("o2", "u1", Decimal("3.00")), 3, "m2") is True
    account, records, count = repo.account("u1")
    assert account.balance == 15 and count == 2
    assert [r.order_id for r in records] == ["o2", "o1"]


def test_the_same_order_delivered_twice_credits_once(repo: CreditRepository) -> None:
    cmd = CreditCommand("o1", "u1", Decimal("10.00"))
    assert repo.apply(cmd, 10, "m1") is True
    assert repo.apply(cmd, 10, "m1-redelivered") is False
    account, records, count = repo.account("u1")
    assert account.balance == 10 and len(records) == 1 and count == 1


def test_concurrent_deliveries_of_one_order_credit_once(repo: CreditRepository) -> None:
    results, errors = [], []
    barrier = threading.Barrier(6)

    def deliver() -> None:
        barrier.wait(10)
        try:
            results.append(repo.apply(CreditCommand("o-race", "u1", Decimal("7.00")), 7, "m"))
        except Exception as exc:  # noqa: BLE001
            errors.append(repr(exc))

    threads = [threading.Thread(target=deliver) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert errors == []
    assert sorted(results) == [False] * 5 + [True]
    assert repo.account("u1")[0].balance == 7


def test_many_users_crediting_concurrently_keep_balances_equal_to_the_ledger(repo: CreditRepository) -> None:
    def worker(w: int) -> None:
        for i in range(25):
            repo.apply(CreditCommand(f"o-{w}-{i}", f"u{i % 5}", Decimal("2.00")), 2, "m")

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    with repo._sessions() as s:
        assert s.scalar(select(func.count()).select_from(CreditRecord)) == 100
    for u in range(5):
        account, _, _ = repo.account(f"u{u}")
        assert account.balance == 40


def test_a_batch_credits_each_order_once_even_when_it_repeats_inside_the_batch(repo: CreditRepository) -> None:
    assert repo.apply(CreditCommand("o-old", "u1", Decimal("4.00")), 4, "m0") is True
    batch = [
        (CreditCommand("o-b1", "u1", Decimal("10.00")), 10, "m1"),
        (CreditCommand("o-old", "u1", Decimal("4.00")), 4, "m0-again"),
        (CreditCommand("o-b2", "u2", Decimal("3.00")), 3, "m2"),
        (CreditCommand("o-b1", "u1", Decimal("10.00")), 10, "m1-again"),
    ]
    assert repo.apply_many(batch) == [True, False, True, False]
    assert repo.apply_many(batch) == [False] * 4
    account, records, count = repo.account("u1")
    assert account.balance == 14 and count == 2
    assert {r.order_id: r.message_id for r in records}["o-b1"] == "m1"
    assert repo.account("u2")[0].balance == 3
