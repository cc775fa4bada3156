"""Synthetic orders and their credits, written in bulk, for the Spark job's tests and benchmarks.

    python -m jobs.generate_credits --credits 1000000 --migrate --reset \\
        --credit-db sqlite:///./data/bench/credit.db --order-db sqlite:///./data/bench/order.db

Every generated order gets exactly one credit (points = whole units of the amount), and every user's
balance equals their ledger points, except for what is injected on purpose: ``missing_credits`` extra
orders without a credit, ``orphan_credits`` extra credits without an order, and ``wrong_balances``
users whose balance is off by a few points. The data is deterministic for a given seed.

SQLite is written with the ``sqlite3`` module directly (one transaction, executemany in batches), PostgreSQL
with ``COPY``. The schemas must exist (``--migrate`` runs the Alembic migrations first).
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from importlib.resources import files
from pathlib import Path
from typing import Any

ALEMBIC_INI = Path(str(files("halfmq.migrations") / "alembic.ini"))  # package data, also from a wheel
DEFAULT_START = datetime(2026, 1, 1, tzinfo=timezone.utc)


@dataclass
class Generated:
    orders: int
    credits: int
    users: int
    points: int
    missing_credits: list[str] = field(default_factory=list)  # orders written without a credit
    orphan_credits: list[str] = field(default_factory=list)  # credits written without an order
    wrong_balances: dict[str, int] = field(default_factory=dict)  # user → how far the balance is off
    seconds: float = 0.0


# ------------------------------------------------------------------------------------------------
# writers: one per database kind, same interface


class _SqliteWriter:
    def __init__(self, url: str) -> None:
        import sqlite3

        from sqlalchemy.engine import make_url

        path = make_url(url).database or ""
        if not Path(path).is_file():
            raise SystemExit(f"{path} does not exist: create the schema first (--migrate)")
        self.conn = sqlite3.connect(path, isolation_level=None, timeout=60, check_same_thread=False)
        self.conn.execute("PRAGMA synchronous=OFF")  # a generator: speed over durability
        self.conn.execute("PRAGMA cache_size=-262144")
        self.conn.execute("BEGIN IMMEDIATE")

    @staticmethod
    def _ts(value: datetime) -> str:  # what SQLAlchemy writes for DateTime(timezone=True) on SQLite: UTC, no offset
        return value.isoformat(" ", "microseconds")

    def orders(self, rows: list[tuple]) -> None:
        ts = self._ts
        self.conn.executemany("INSERT INTO orders (order_id, user_id, amount, status, created_at) VALUES (?,?,?,?,?)",
                              [(o, u, c / 100, "created", ts(t)) for o, u, c, t in rows])

    def credits(self, rows: list[tuple]) -> None:
        ts = self._ts
        self.conn.executemany(
            "INSERT INTO credit_records (order_id, user_id, amount, points, message_id, created_at) VALUES (?,?,?,?,?,?)",
            [(o, u, c / 100, p, m, ts(t)) for o, u, c, p, m, t in rows])

    def accounts(self, rows: list[tuple]) -> None:
        self.conn.executemany(
            "INSERT INTO credit_accounts (user_id, balance, updated_at) VALUES (?,?,?) ON CONFLICT (user_id) DO UPDATE "
            "SET balance = credit_accounts.balance + excluded.balance, updated_at = excluded.updated_at",
            [(u, b, self._ts(t)) for u, b, t in rows])

    def execute(self, sql: str) -> None:
        self.conn.execute(sql)

    def commit(self) -> None:
        self.conn.execute("COMMIT")
        self.conn.close()

    def rollback(self) -> None:
        self.conn.execute("ROLLBACK")
        self.conn.close()


class _PostgresWriter:
    def __init__(self, url: str) -> None:
        import psycopg
        from sqlalchemy.engine import make_url

        conninfo = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
        self.conn = psycopg.connect(conninfo)

    def _copy(self, sql: str, rows: Iterator[tuple]) -> None:
        with self.conn.cursor() as cur, cur.copy(sql) as copy:
            for row in rows:
                copy.write_row(row)

    @staticmethod
    def _amount(cents: int) -> str:
        return f"{cents // 100}.{cents % 100:02d}"

    def orders(self, rows: list[tuple]) -> None:
        self._copy("COPY orders (order_id, user_id, amount, status, created_at) FROM STDIN",
                   ((o, u, self._amount(c), "created", t.replace(tzinfo=timezone.utc)) for o, u, c, t in rows))

    def credits(self, rows: list[tuple]) -> None:
        self._copy("COPY credit_records (order_id, user_id, amount, points, message_id, created_at) FROM STDIN",
                   ((o, u, self._amount(c), p, m, t.replace(tzinfo=timezone.utc)) for o, u, c, p, m, t in rows))

    def accounts(self, rows: list[tuple]) -> None:
        with self.conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO credit_accounts (user_id, balance, updated_at) VALUES (%s,%s,%s) ON CONFLICT (user_id) DO UPDATE "
                "SET balance = credit_accounts.balance + excluded.balance, updated_at = excluded.updated_at",
                [(u, b, t.replace(tzinfo=timezone.utc)) for u, b, t in rows])

    def execute(self, sql: str) -> None:
        self.conn.execute(sql)

    def commit(self) -> None:
        self.conn.commit()
        self.conn.close()

    def rollback(self) -> None:
        self.conn.rollback()
        self.conn.close()


def _writer(url: str) -> Any:
    from sqlalchemy.engine import make_url

    backend = make_url(url).get_backend_name()
    if backend == "sqlite":
        return _SqliteWriter(url)
    if backend == "postgresql":
        return _PostgresWriter(url)
    raise SystemExit(f"unsupported database {backend!r}: SQLite or PostgreSQL")


# ------------------------------------------------------------------------------------------------
# the data


def _rows(n: int, rng: random.Random, users: list[str], start: datetime, span: timedelta, points_per_unit: int,
          batch: int) -> Iterator[tuple[list[tuple], list[tuple]]]:
    """Batches of (orders, credits): order i is placed at an evenly spread time, credited a moment later.

    Rows are ``(order_id, user_id, cents, created_at)`` and ``(order_id, user_id, cents, points, message_id,
    created_at)`` with naive UTC datetimes; the writers turn them into what each database wants.
    """
    step = span / max(n, 1)
    base = start.astimezone(timezone.utc).replace(tzinfo=None)
    bits, pick, n_users = rng.getrandbits, rng.randrange, len(users)
    orders: list[tuple] = []
    credits: list[tuple] = []
    for i in range(n):
        order_id = f"{bits(128):032x}"
        user = users[pick(n_users)]
        cents = pick(100, 50_000)
        placed = base + step * i
        orders.append((order_id, user, cents, placed))
        credits.append((order_id, user, cents, (cents // 100) * points_per_unit, "m" + order_id[:24],
                        placed + timedelta(microseconds=pick(5_000, 500_000))))
        if len(orders) >= batch:
            yield orders, credits
            orders, credits = [], []
    if orders:
        yield orders, credits


def generate(credit_url: str, order_url: str, credits: int, *, users: int | None = None, days: int = 30,
             start: datetime = DEFAULT_START, seed: int = 42, missing_credits: int = 0, orphan_credits: int = 0,
             wrong_balances: int = 0, points_per_unit: int = 1, batch: int = 50_000, reset: bool = False,
             progress: bool = False) -> Generated:
    """Write ``credits`` orders with one credit each (plus the injected problems); both databases commit at the end."""
    started = time.perf_counter()
    rng = random.Random(seed)
    n_users = users or max(1, credits // 100)
    user_ids = [f"user-{k:07d}" for k in range(n_users)]
    span = timedelta(days=days)
    cw, ow = _writer(credit_url), _writer(order_url)
    pool = ThreadPoolExecutor(1, thread_name_prefix="orders-writer")
    out = Generated(orders=0, credits=0, users=0, points=0)
    balances: dict[str, int] = defaultdict(int)
    try:
        if reset:
            for table in ("summary_current", "summary_users", "summary_days", "summary_runs", "credit_accounts", "credit_records"):
                cw.execute(f"DELETE FROM {table}")
            for table in ("idempotency_keys", "order_transactions", "orders"):
                ow.execute(f"DELETE FROM {table}")
        # the two databases are written side by side: the drivers release the GIL while the database works
        pending = None
        for orders, creds in _rows(credits, rng, user_ids, start, span, points_per_unit, batch):
            if pending is not None:
                pending.result()
            pending = pool.submit(ow.orders, orders)
            cw.credits(creds)
            for c in creds:
                balances[c[1]] += c[3]
            out.orders += len(orders)
            out.credits += len(creds)
            if progress:
                print(f"\r  {out.credits:,}/{credits:,} credits", end="", file=sys.stderr, flush=True)
        if pending is not None:
            pending.result()
        if progress:
            print(file=sys.stderr)
        # orders that never got their credit
        extra_orders, extra_credits = [], []
        for orders, _ in _rows(missing_credits, rng, user_ids, start, span, points_per_unit, batch):
            extra_orders += orders
        # credits whose order does not exist (they count in the ledger, so in the balances too)
        for _, creds in _rows(orphan_credits, rng, user_ids, start, span, points_per_unit, batch):
            extra_credits += creds
        if extra_orders:
            ow.orders(extra_orders)
        if extra_credits:
            cw.credits(extra_credits)
            for c in extra_credits:
                balances[c[1]] += c[3]
        out.orders += len(extra_orders)
        out.credits += len(extra_credits)
        out.missing_credits = sorted(o[0] for o in extra_orders)
        out.orphan_credits = sorted(c[0] for c in extra_credits)
        for user in sorted(balances)[:wrong_balances]:
            out.wrong_balances[user] = 7
        now = (start + span).astimezone(timezone.utc).replace(tzinfo=None)
        cw.accounts([(u, b + out.wrong_balances.get(u, 0), now) for u, b in sorted(balances.items())])
        out.users = len(balances)
        out.points = sum(balances.values())
        ow.commit()
        cw.commit()
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)
        for w in (ow, cw):
            try:
                w.rollback()
            except Exception:  # noqa: BLE001
                pass
        raise
    pool.shutdown()
    out.seconds = time.perf_counter() - started
    return out


def migrate(name: str, url: str) -> None:
    """Create the schema with the project's Alembic migrations (a subprocess: jobs import nothing from services)."""
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database:
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "alembic", "-c", str(ALEMBIC_INI), "--name", name, "-x", f"url={url}",
                    "upgrade", "head"], check=True, stdout=subprocess.DEVNULL)


def main(argv: list[str] | None = None) -> int:
    from .credit_aggregate import AggregateSettings

    defaults = AggregateSettings()
    parser = argparse.ArgumentParser(prog="generate_credits", description="write synthetic orders and credits in bulk")
    parser.add_argument("--credits", type=int, default=1_000_000, help="orders with one credit each (default 1,000,000)")
    parser.add_argument("--users", type=int, help="distinct users (default credits/100)")
    parser.add_argument("--days", type=int, default=30, help="days the orders are spread over (from 2026-01-01)")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--missing", type=int, default=0, help="extra orders without a credit")
    parser.add_argument("--orphans", type=int, default=0, help="extra credits without an order")
    parser.add_argument("--wrong-balances", type=int, default=0, help="users whose balance is off")
    parser.add_argument("--credit-db", default=defaults.credit_database_url)
    parser.add_argument("--order-db", default=defaults.order_database_url)
    parser.add_argument("--migrate", action="store_true", help="run the Alembic migrations first")
    parser.add_argument("--reset", action="store_true", help="delete existing orders, credits, accounts and summaries first")
    args = parser.parse_args(argv)
    if args.migrate:
        migrate("credit", args.credit_db)
        migrate("order", args.order_db)
    out = generate(args.credit_db, args.order_db, args.credits, users=args.users, days=args.days, seed=args.seed,
                   missing_credits=args.missing, orphan_credits=args.orphans, wrong_balances=args.wrong_balances,
                   reset=args.reset, progress=True)
    print(f"wrote {out.orders:,} orders and {out.credits:,} credits for {out.users:,} users ({out.points:,} points) "
          f"in {out.seconds:.1f}s; missing credits {len(out.missing_credits)}, orphan credits {len(out.orphan_credits)}, "
          f"wrong balances {len(out.wrong_balances)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
