from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import MetaData, create_engine, func, inspect, select
from sqlalchemy.exc import StatementError

from halfmq.client.sqlalchemy.barrier import TransactionBarrier
from halfmq.client.sqlalchemy.records import TABLE_NAME, create_transaction_records, drop_transaction_records, transaction_records_table
from tests.support.fake_clock import FakeSleep
from tests.support.loop_steps import run_ready

NOW = 1_800_000_000.0


def test_the_table_has_a_txid_key_a_unique_business_key_and_a_utc_time() -> None:
    table = transaction_records_table(MetaData())
    assert table.name == TABLE_NAME == "halfmq_transaction_records"
    assert [c.name for c in table.primary_key] == ["txid"]
    assert table.c.business_key.unique and not table.c.business_key.nullable
    assert transaction_records_table(table.metadata) is table, "one table per metadata"


def test_created_on_an_engine_it_stores_aware_utc_times(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite:///{tmp_path}/r.db")
    create_transaction_records(engine)
    create_transaction_records(engine)  # a second time is a no-op
    table = transaction_records_table(MetaData())
    with engine.begin() as conn:
        conn.execute(table.insert().values(txid="t1", business_key="b1", created_at=datetime.fromtimestamp(NOW, UTC)))
        assert conn.scalar(select(table.c.created_at)) == datetime.fromtimestamp(NOW, UTC)
        with pytest.raises(StatementError, match="naive"):
            conn.execute(table.insert().values(txid="t2", business_key="b2", created_at=datetime(2026, 1, 1)))


class FakeOp:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def create_table(self, name: str, *columns: Any, **kw: Any) -> None:
        self.calls.append(("create_table", (name, [c.name for c in columns])))

    def create_index(self, name: str, table: str, columns: list[str], **kw: Any) -> None:
        self.calls.append(("create_index", (name, table, columns)))

    def drop_index(self, name: str, table_name: str | None = None, **kw: Any) -> None:
        self.calls.append(("drop_index", (name, table_name)))

    def drop_table(self, name: str, **kw: Any) -> None:
        self.calls.append(("drop_table", name))


def test_the_alembic_helpers_create_and_drop_the_table_and_its_index() -> None:
    op = FakeOp()
    create_transaction_records(op)
    drop_transaction_records(op)
    assert op.calls == [
        ("create_table", (TABLE_NAME, ["txid", "business_key", "created_at"])),
        ("create_index", (f"ix_{TABLE_NAME}_created_at", TABLE_NAME, ["created_at"])),
        ("drop_index", (f"ix_{TABLE_NAME}_created_at", TABLE_NAME)),
        ("drop_table", TABLE_NAME),
    ]


def test_cleanup_deletes_only_records_older_than_the_retention_in_bounded_batches(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite:///{tmp_path}/r.db")
    create_transaction_records(engine)
    barrier = TransactionBarrier(engine, retention=3600, cleanup_batch=3, clock=lambda: NOW)
    now = datetime.fromtimestamp(NOW, UTC)
    ages = [7200] * 7 + [3599, 10, 0]
    with engine.begin() as conn:
        conn.execute(barrier.table.insert(), [
            {"txid": f"t{i}", "business_key": f"b{i}", "created_at": now - timedelta(seconds=age)} for i, age in enumerate(ages)
        ])
    assert barrier.purge_blocking() == 7
    with engine.connect() as conn:
        assert sorted(conn.scalars(select(barrier.table.c.txid))) == ["t7", "t8", "t9"]
        assert conn.scalar(select(func.count()).select_from(barrier.table)) == 3
    assert barrier.purge_blocking() == 0
    assert f"ix_{TABLE_NAME}_created_at" in {ix["name"] for ix in inspect(engine).get_indexes(TABLE_NAME)}


@pytest.mark.parametrize("settings", [{"retention": 60}, {"retention": 10, "local_tx_timeout": 5, "commit_grace": 5}, {"cleanup_batch": 0}])
def test_a_retention_the_check_backs_could_outlive_is_refused(tmp_path: Path, settings: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        TransactionBarrier(create_engine("sqlite://"), **settings)


async def test_the_async_barrier_deletes_expired_records_too(tmp_path: Path) -> None:
    from sqlalchemy.ext.asyncio import create_async_engine

    from halfmq.client.sqlalchemy.async_barrier import AsyncTransactionBarrier

    create_transaction_records(create_engine(f"sqlite:///{tmp_path}/r.db"))
    engine = create_async_engine(f"sqlite+aiosqlite:///{tmp_path}/r.db")
    barrier = AsyncTransactionBarrier(engine, retention=3600, cleanup_batch=2, clock=lambda: NOW)
    now = datetime.fromtimestamp(NOW, UTC)
    async with engine.begin() as conn:
        await conn.execute(barrier.table.insert(), [
            {"txid": f"t{i}", "business_key": f"b{i}", "created_at": now - timedelta(seconds=age)} for i, age in enumerate([4000] * 5 + [5])
        ])
    assert await barrier.purge() == 5
    assert await barrier.transaction_of("b5") == "t5" and await barrier.transaction_of("b0") is None
    await engine.dispose()


async def test_cleanup_runs_at_start_and_then_every_interval_until_closed(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite:///{tmp_path}/r.db")
    create_transaction_records(engine)
    clock = [NOW]
    sleep = FakeSleep()
    barrier = TransactionBarrier(engine, retention=3600, cleanup_interval=0.05, clock=lambda: clock[0], sleep=sleep)

    def add(txid: str) -> None:
        with engine.begin() as conn:
            conn.execute(barrier.table.insert().values(txid=txid, business_key=txid, created_at=datetime.fromtimestamp(NOW - 4000, UTC)))

    add("old-1")
    await barrier.start()
    assert barrier.transaction_of("old-1") is None, "deleted at start"
    add("old-2")
    await sleep.until_sleeping()
    sleep.wake()  # a cleanup_interval passes
    await sleep.until_sleeping()  # that pass is over
    assert barrier.transaction_of("old-2") is None, "deleted by the periodic cleanup"
    assert sleep.asked == [0.05, 0.05]
    await barrier.close()
    add("old-3")
    assert sleep.sleeping == 0
    sleep.wake()
    await run_ready()
    assert barrier.transaction_of("old-3") == "old-3", "no cleanup after close"
    assert sleep.asked == [0.05, 0.05]
