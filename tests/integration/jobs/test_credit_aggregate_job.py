"""The Spark job for real, on SQLite and on PostgreSQL: JDBC reads, the atomic publish, Parquet, the report.

A few thousand generated orders with one credit each, plus one order left without its credit, one
credit without an order and one account with a wrong balance. Every expected number is computed
independently in SQL.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from sqlalchemy import Date, Engine, cast, func, select
from sqlalchemy.exc import IntegrityError

from halfmq.jobs import credit_aggregate as job
from halfmq.jobs.generate_credits import Generated, generate
from halfmq.services.credit.models import CreditAccount, CreditRecord, SummaryCurrent, SummaryDay, SummaryRun, SummaryUser
from halfmq.services.credit.repository import CreditRepository
from halfmq.services.database import create_db_engine, migrate
from halfmq.services.order.models import Order

CREDITS = 3000


@dataclass
class Dataset:
    kind: str
    credit_url: str
    order_url: str
    credit: Engine
    order: Engine
    generated: Generated
    output_dir: Path

    def settings(self, **overrides) -> job.AggregateSettings:
        return job.AggregateSettings(credit_database_url=self.credit_url, order_database_url=self.order_url,
                                     output_dir=str(self.output_dir), partitions=4, **overrides)


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def dataset(request, tmp_path_factory) -> Dataset:
    tmp = tmp_path_factory.mktemp(f"aggregate-{request.param}")
    dropped: list[str] = []
    if request.param == "sqlite":
        credit_url, order_url = f"sqlite:///{tmp}/credit.db", f"sqlite:///{tmp}/order.db"
    else:
        cluster = request.getfixturevalue("postgres")
        names = [f"credit_{uuid.uuid4().hex[:8]}", f"order_{uuid.uuid4().hex[:8]}"]
        credit_url, order_url = (cluster.create_database(n) for n in names)
        dropped = names
    credit, order = create_db_engine(credit_url, pool_size=2), create_db_engine(order_url, pool_size=2)
    migrate("credit", credit)
    migrate("order", order)
    generated = generate(credit_url, order_url, CREDITS, users=40, days=12, seed=7,
                         missing_credits=1, orphan_credits=1, wrong_balances=1)
    yield Dataset(request.param, credit_url, order_url, credit, order, generated, tmp / "spark")
    credit.dispose()
    order.dispose()
    for name in dropped:
        request.getfixturevalue("postgres").drop_database(name)


@pytest.fixture(scope="module")
def first_run(dataset: Dataset, spark) -> job.AggregateResult:
    return job.run(dataset.settings(), spark=spark)


def utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def ledger_per_user(engine: Engine) -> dict[str, tuple]:
    stmt = select(CreditRecord.user_id, func.sum(CreditRecord.points), func.count(), func.min(CreditRecord.created_at),
                  func.max(CreditRecord.created_at)).group_by(CreditRecord.user_id)
    with engine.connect() as conn:
        return {u: (int(p), int(n), utc(lo), utc(hi)) for u, p, n, lo, hi in conn.execute(stmt)}


def ledger_per_day(engine: Engine) -> dict[date, tuple]:
    if engine.dialect.name == "sqlite":  # SQLAlchemy stores UTC text there
        day = func.date(CreditRecord.created_at)
    else:
        day = cast(func.timezone("UTC", CreditRecord.created_at), Date)
    stmt = select(day, func.sum(CreditRecord.points), func.count()).group_by(day)
    with engine.connect() as conn:
        return {(d if isinstance(d, date) else date.fromisoformat(d)): (int(p), int(n)) for d, p, n in conn.execute(stmt)}


def published(engine: Engine, run_id: str) -> tuple[dict[str, tuple], dict[date, tuple]]:
    with engine.connect() as conn:
        users = {r.user_id: (r.points, r.orders, utc(r.first_credit_at), utc(r.last_credit_at))
                 for r in conn.execute(select(SummaryUser.__table__).where(SummaryUser.run_id == run_id))}
        days = {r.day: (r.points, r.orders) for r in conn.execute(select(SummaryDay.__table__).where(SummaryDay.run_id == run_id))}
    return users, days


def current_run(engine: Engine) -> str | None:
    with engine.connect() as conn:
        return conn.scalar(select(SummaryCurrent.run_id).where(SummaryCurrent.id == 1))


def run_ids(engine: Engine) -> set[str]:
    with engine.connect() as conn:
        return {
            *conn.scalars(select(SummaryRun.run_id)),
            *conn.scalars(select(SummaryUser.run_id).distinct()),
            *conn.scalars(select(SummaryDay.run_id).distinct()),
        }


def test_the_published_per_user_totals_equal_the_ledger_summed_in_sql(dataset: Dataset, first_run) -> None:
    expected = ledger_per_user(dataset.credit)
    users, _ = published(dataset.credit, first_run.run_id)
    assert users == expected
    assert {u["user_id"]: (u["points"], u["orders"], u["first_credit_at"], u["last_credit_at"]) for u in first_run.users} == expected
    assert first_run.credits == CREDITS + 1 and first_run.points == dataset.generated.points


def test_the_published_per_day_totals_equal_the_ledger_summed_in_sql(dataset: Dataset, first_run) -> None:
    expected = ledger_per_day(dataset.credit)
    _, days = published(dataset.credit, first_run.run_id)
    assert days == expected
    assert len(days) >= 12
    assert sum(p for p, _ in days.values()) == dataset.generated.points


def test_summary_current_points_at_the_new_run_and_the_service_serves_it(dataset: Dataset, first_run) -> None:
    assert current_run(dataset.credit) == first_run.run_id
    run, users, days = CreditRepository(dataset.credit).current_summary()
    assert run.run_id == first_run.run_id
    assert abs(utc(run.computed_at) - first_run.computed_at) < timedelta(milliseconds=1)
    assert [(u.user_id, u.points, u.orders) for u in users] == [(u["user_id"], u["points"], u["orders"]) for u in first_run.users]
    assert [(d.day, d.points, d.orders) for d in days] == [(d["day"], d["points"], d["orders"]) for d in first_run.days]


def test_the_reconciliation_reports_exactly_the_injected_problems(dataset: Dataset, first_run) -> None:
    g = dataset.generated
    (wrong_user, off_by), = g.wrong_balances.items()
    ledger_points = ledger_per_user(dataset.credit)[wrong_user][0]
    with dataset.order.connect() as conn:
        orders = conn.scalar(select(func.count()).select_from(Order))
    report = first_run.report
    assert report["orders_committed"] == orders == CREDITS + 1
    assert report["credits"] == CREDITS + 1
    assert report["missing_credits"] == g.missing_credits and len(g.missing_credits) == 1
    assert report["orphan_credits"] == g.orphan_credits and len(g.orphan_credits) == 1
    assert report["balance_mismatches"] == [{"user_id": wrong_user, "balance": ledger_points + off_by, "ledger_points": ledger_points}]
    assert first_run.exit_code == job.EXIT_PROBLEMS
    assert json.loads((dataset.output_dir / "reconciliation.json").read_text()) == report
    assert datetime.fromisoformat(report["checked_at"]).tzinfo is not None


def test_the_recheck_clears_problems_that_resolved_after_the_scans_and_keeps_the_real_ones(dataset: Dataset, first_run) -> None:
    real = first_run.reconciliation
    (wrong_user, _), = dataset.generated.wrong_balances.items()
    with dataset.credit.connect() as conn:
        credited = conn.scalar(select(CreditRecord.order_id).where(CreditRecord.order_id.not_in(real.orphan_credits)).limit(1))
        right_user = conn.scalar(select(CreditAccount.user_id).where(CreditAccount.user_id != wrong_user).limit(1))
    # as a scan racing the services could see them: an order "not yet" credited, a credit whose order "did not yet"
    # exist, a balance that had moved on from the summed ledger
    candidates = job.Reconciliation(
        real.orders_committed, real.credits,
        missing_credits=sorted([*real.missing_credits, credited]),
        orphan_credits=sorted([*real.orphan_credits, credited]),
        balance_mismatches=[*real.balance_mismatches, {"user_id": right_user, "balance": 1, "ledger_points": 2}],
    )
    credit_reader, order_reader = job.create_engine_for(dataset.credit_url), job.create_engine_for(dataset.order_url)
    try:
        rechecked, cleared = job.recheck(candidates, credit_reader, order_reader)
    finally:
        credit_reader.dispose()
        order_reader.dispose()
    assert rechecked == real
    assert cleared == {"missing_credits": 1, "orphan_credits": 1, "balance_mismatches": 1}


def test_the_parquet_output_holds_the_published_totals(dataset: Dataset, first_run, spark) -> None:
    run_dir = dataset.output_dir / first_run.run_id
    assert (dataset.output_dir / "latest").read_text().strip() == first_run.run_id
    assert list((run_dir / "users").glob("*.parquet")) and list((run_dir / "days").glob("*.parquet"))
    users = {r["user_id"]: (r["points"], r["orders"]) for r in spark.read.parquet(str(run_dir / "users")).collect()}
    days = {r["day"]: (r["points"], r["orders"]) for r in spark.read.parquet(str(run_dir / "days")).collect()}
    assert users == {u: (p, n) for u, (p, n, _, _) in ledger_per_user(dataset.credit).items()}
    assert days == ledger_per_day(dataset.credit)


def test_a_failed_publish_leaves_the_current_summary_untouched(dataset: Dataset, first_run) -> None:
    before = published(dataset.credit, first_run.run_id)
    row = {"user_id": "dup", "points": 1, "orders": 1, "first_credit_at": first_run.computed_at, "last_credit_at": first_run.computed_at}
    with pytest.raises(IntegrityError):  # the second row violates summary_users' key half-way through
        job.publish_summary(dataset.credit, "failed-run", datetime.now(UTC), [row, row], [])
    assert current_run(dataset.credit) == first_run.run_id
    assert "failed-run" not in run_ids(dataset.credit)
    assert published(dataset.credit, first_run.run_id) == before


def test_a_second_run_replaces_the_first_atomically_and_two_runs_are_kept(dataset: Dataset, first_run, spark) -> None:
    # a new order and its credit arrive between runs
    now = datetime.now(UTC)
    with dataset.order.begin() as conn:
        conn.execute(Order.__table__.insert().values(order_id="late-order", user_id="late-user", amount=Decimal("9.99"),
                                                     status="created", created_at=now))
    with dataset.credit.begin() as conn:
        conn.execute(CreditRecord.__table__.insert().values(order_id="late-order", user_id="late-user", amount=Decimal("9.99"),
                                                            points=9, message_id="m-late", created_at=now))
        conn.execute(CreditAccount.__table__.insert().values(user_id="late-user", balance=9, updated_at=now))

    second = job.run(dataset.settings(), spark=spark)
    assert second.run_id != first_run.run_id
    assert current_run(dataset.credit) == second.run_id
    users, days = published(dataset.credit, second.run_id)
    assert users == ledger_per_user(dataset.credit) and users["late-user"][:2] == (9, 1)
    assert days == ledger_per_day(dataset.credit)
    assert run_ids(dataset.credit) == {first_run.run_id, second.run_id}  # the previous run stays for readers mid-way
    assert second.report["missing_credits"] == first_run.report["missing_credits"]

    third = job.run(dataset.settings(), spark=spark)
    assert current_run(dataset.credit) == third.run_id
    assert run_ids(dataset.credit) == {second.run_id, third.run_id}
    assert third.removed_runs == [first_run.run_id]
    assert published(dataset.credit, third.run_id) == (users, days)
    assert sorted(p.name for p in dataset.output_dir.iterdir() if p.is_dir()) == sorted([second.run_id, third.run_id])
    assert (dataset.output_dir / "latest").read_text().strip() == third.run_id


def test_an_empty_ledger_publishes_an_empty_summary_and_reports_every_order_missing(tmp_path: Path, spark) -> None:
    credit_url, order_url = f"sqlite:///{tmp_path}/credit.db", f"sqlite:///{tmp_path}/order.db"
    credit, order = create_db_engine(credit_url, pool_size=1), create_db_engine(order_url, pool_size=1)
    migrate("credit", credit)
    migrate("order", order)
    with order.begin() as conn:
        conn.execute(Order.__table__.insert().values(order_id="lonely", user_id="u", amount=Decimal("1.00"),
                                                     status="created", created_at=datetime.now(UTC)))
    result = job.run(job.AggregateSettings(credit_database_url=credit_url, order_database_url=order_url,
                                           output_dir=str(tmp_path / "spark")), spark=spark)
    assert (result.users, result.days, result.credits, result.points) == ([], [], 0, 0)
    assert current_run(credit) == result.run_id
    assert result.report["missing_credits"] == ["lonely"] and result.report["orders_committed"] == 1
    assert result.exit_code == job.EXIT_PROBLEMS
    credit.dispose()
    order.dispose()
