"""Bulk writers, one per database kind with the same interface: ``orders``, ``credits``, ``accounts``, ``commit``.

SQLite is written with the ``sqlite3`` module directly (one transaction, executemany in batches), PostgreSQL
with ``COPY``: the ORM would take minutes for a million rows.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


class SqliteWriter:
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


class PostgresWriter:
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
                   ((o, u, self._amount(c), "created", t.replace(tzinfo=UTC)) for o, u, c, t in rows))

    def credits(self, rows: list[tuple]) -> None:
        self._copy("COPY credit_records (order_id, user_id, amount, points, message_id, created_at) FROM STDIN",
                   ((o, u, self._amount(c), p, m, t.replace(tzinfo=UTC)) for o, u, c, p, m, t in rows))

    def accounts(self, rows: list[tuple]) -> None:
        with self.conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO credit_accounts (user_id, balance, updated_at) VALUES (%s,%s,%s) ON CONFLICT (user_id) DO UPDATE "
                "SET balance = credit_accounts.balance + excluded.balance, updated_at = excluded.updated_at",
                [(u, b, t.replace(tzinfo=UTC)) for u, b, t in rows])

    def execute(self, sql: str) -> None:
        self.conn.execute(sql)

    def commit(self) -> None:
        self.conn.commit()
        self.conn.close()

    def rollback(self) -> None:
        self.conn.rollback()
        self.conn.close()


def writer_for(url: str) -> Any:
    """The bulk writer for the database ``url`` names: one kind per database, same interface."""
    from sqlalchemy.engine import make_url

    backend = make_url(url).get_backend_name()
    if backend == "sqlite":
        return SqliteWriter(url)
    if backend == "postgresql":
        return PostgresWriter(url)
    raise SystemExit(f"unsupported database {backend!r}: SQLite or PostgreSQL")
