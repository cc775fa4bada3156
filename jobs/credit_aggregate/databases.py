"""The job's SQLAlchemy side: the tables by name, small engines, the preflight, and the re-check.

The services own the tables: the job knows them only by their names and columns (it imports nothing
from ``services``, an import-linter contract).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .jdbc import AggregateError, IdBounds, dialect_of
from .reconciliation import Reconciliation

if TYPE_CHECKING:
    from sqlalchemy import Engine


@functools.lru_cache(maxsize=1)
def tables():
    """The tables the job touches, by name and columns only (the services own them)."""
    from sqlalchemy import BigInteger, Column, Date, DateTime, Integer, MetaData, String, Table

    md = MetaData()
    return {
        "credit_records": Table("credit_records", md, Column("id", Integer, primary_key=True), Column("order_id", String(64)),
                                Column("user_id", String(64)), Column("points", BigInteger)),
        "credit_accounts": Table("credit_accounts", md, Column("user_id", String(64), primary_key=True),
                                 Column("balance", BigInteger)),
        "orders": Table("orders", md, Column("order_id", String(32), primary_key=True)),
        "summary_runs": Table("summary_runs", md, Column("run_id", String(64), primary_key=True),
                              Column("computed_at", DateTime(timezone=True))),
        "summary_users": Table("summary_users", md, Column("run_id", String(64), primary_key=True),
                               Column("user_id", String(64), primary_key=True), Column("points", BigInteger),
                               Column("orders", BigInteger), Column("first_credit_at", DateTime(timezone=True)),
                               Column("last_credit_at", DateTime(timezone=True))),
        "summary_days": Table("summary_days", md, Column("run_id", String(64), primary_key=True),
                              Column("day", Date, primary_key=True), Column("points", BigInteger), Column("orders", BigInteger)),
        "summary_current": Table("summary_current", md, Column("id", Integer, primary_key=True), Column("run_id", String(64))),
    }


def create_engine_for(url: str, write: bool = False) -> Engine:
    """A small engine. On SQLite it waits for the credit service's writers, and a ``write`` engine takes the
    write lock when its transaction begins (two deferred writers would deadlock instead of queueing)."""
    from sqlalchemy import create_engine, event

    if dialect_of(url) == "sqlite":
        engine = create_engine(url, connect_args={"timeout": 60})

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn, _record) -> None:
            dbapi_conn.isolation_level = None
            dbapi_conn.execute("PRAGMA busy_timeout=60000")

        @event.listens_for(engine, "begin")
        def _begin(conn) -> None:
            conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")

        return engine
    return create_engine(url, pool_pre_ping=True)


def _safe(url: str) -> str:
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001
        return "<unparseable URL>"


def preflight(credit_url: str, order_url: str) -> IdBounds:
    """Fail before the JVM starts when a database is missing; the ledger's id range for partitioning."""
    from sqlalchemy import func, select
    from sqlalchemy.engine import make_url

    for name, url in (("credit", credit_url), ("order", order_url)):
        if dialect_of(url) == "sqlite":
            path = Path(make_url(url).database or "")
            if not path.is_file():
                raise AggregateError(f"the {name} database {path.resolve()} does not exist "
                                     f"(start the {name} service once, or run `alembic -c migrations/alembic.ini --name {name} upgrade head`)")
    t = tables()
    engine = create_engine_for(credit_url)
    try:
        with engine.connect() as conn:
            low, high, rows = conn.execute(select(func.min(t["credit_records"].c.id), func.max(t["credit_records"].c.id),
                                                  func.count())).one()
    except Exception as exc:
        raise AggregateError(f"cannot read credit_records in {_safe(credit_url)}: {exc}") from exc
    finally:
        engine.dispose()
    engine = create_engine_for(order_url)
    try:
        with engine.connect() as conn:
            conn.execute(select(t["orders"].c.order_id).limit(1)).all()
    except Exception as exc:
        raise AggregateError(f"cannot read orders in {_safe(order_url)}: {exc}") from exc
    finally:
        engine.dispose()
    return IdBounds(low, high, int(rows))


@contextmanager
def _snapshot(engine: Engine) -> Iterator[Any]:
    """A read-only transaction whose statements all see one snapshot of the database."""
    if engine.dialect.name == "postgresql":
        with engine.connect().execution_options(isolation_level="REPEATABLE READ") as conn, conn.begin():
            yield conn
    else:  # SQLite: a (deferred) read transaction is a snapshot
        with engine.connect() as conn, conn.begin():
            yield conn


def _chunks(items: Sequence[str], size: int = 500) -> Iterator[Sequence[str]]:
    for i in range(0, len(items), size):
        yield items[i:i + size]


def recheck(rec: Reconciliation, credit_engine: Engine, order_engine: Engine, limit: int = 50_000) -> tuple[Reconciliation, dict[str, int]]:
    """Look at every reported problem again with point queries on the live databases; keep the real ones.

    Spark's reads are not one snapshot. While the services run, a credit can land between the ledger scan
    and the balance scan (the balance moved, the summed ledger did not), or an order can be credited right
    after the scan. Each candidate is checked again — a user's balance and ledger sum in one transaction —
    and kept only if it is still a problem. At rest nothing changes. More than ``limit`` candidates of a
    kind are reported unchecked (that many are not in-flight noise). Returns the result and how many of
    each kind were cleared.
    """
    from sqlalchemy import func, select

    t = tables()
    records, accounts, orders = t["credit_records"], t["credit_accounts"], t["orders"]
    cleared = {"missing_credits": 0, "orphan_credits": 0, "balance_mismatches": 0}
    missing, orphans, mismatches = rec.missing_credits, rec.orphan_credits, rec.balance_mismatches
    if missing and len(missing) <= limit:
        with _snapshot(credit_engine) as conn:
            credited = {o for chunk in _chunks(missing) for o in conn.scalars(select(records.c.order_id).where(records.c.order_id.in_(chunk)))}
        missing = [o for o in missing if o not in credited]
    if orphans and len(orphans) <= limit:
        with _snapshot(order_engine) as conn:
            ordered = {o for chunk in _chunks(orphans) for o in conn.scalars(select(orders.c.order_id).where(orders.c.order_id.in_(chunk)))}
        orphans = [o for o in orphans if o not in ordered]
    if mismatches and len(mismatches) <= limit:
        users = [m["user_id"] for m in mismatches]
        balance: dict[str, int] = {}
        ledger: dict[str, int] = {}
        with _snapshot(credit_engine) as conn:
            for chunk in _chunks(users):
                balance.update(conn.execute(select(accounts.c.user_id, accounts.c.balance).where(accounts.c.user_id.in_(chunk))).all())
                ledger.update(conn.execute(select(records.c.user_id, func.sum(records.c.points))
                                           .where(records.c.user_id.in_(chunk)).group_by(records.c.user_id)).all())
        mismatches = [{"user_id": u, "balance": int(balance.get(u) or 0), "ledger_points": int(ledger.get(u) or 0)}
                      for u in users if int(balance.get(u) or 0) != int(ledger.get(u) or 0)]
    cleared["missing_credits"] = len(rec.missing_credits) - len(missing)
    cleared["orphan_credits"] = len(rec.orphan_credits) - len(orphans)
    cleared["balance_mismatches"] = len(rec.balance_mismatches) - len(mismatches)
    return Reconciliation(rec.orders_committed, rec.credits, missing, orphans, mismatches), cleared
