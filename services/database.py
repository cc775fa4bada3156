"""Engines and migrations shared by the services (each service has its own database)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from datetime import UTC, datetime
from importlib.resources import files
from pathlib import Path
from typing import TypeVar

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import DateTime, Engine, TypeDecorator, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DataError, IntegrityError
from sqlalchemy.orm import Session, sessionmaker

MIGRATIONS = Path(str(files("halfmq.migrations")))  # alembic.ini and one tree per database, as package data


# Execution options (arbitrary keys are allowed): ``_WRITES`` marks an engine whose transactions
# write; ``_WRITE_LOCK`` carries a SQLite engine's in-process write lock.
_WRITES = "halfmq_writes"
_WRITE_LOCK = "halfmq_write_lock"


def create_db_engine(url: str, pool_size: int = 20) -> Engine:
    """An engine tuned for the service's concurrency; SQLite gets WAL, a busy timeout and FK checks.

    On SQLite only write transactions (``WriteSessions``, ``migrate``) take the write lock, and
    they queue for it on an in-process lock first. Reads begin a plain deferred transaction: in
    WAL mode they see a snapshot beside the writer and never wait for it. (Taking the write lock
    for every transaction, reads included, made each order wait twice for the lock, and the
    waiters sat in SQLite's busy handler, which sleeps up to 100 ms between retries while the
    lock is long free: 100-200 orders/s with 6 threads mostly asleep.)
    """
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"timeout": 30, "check_same_thread": False}, pool_size=pool_size, max_overflow=pool_size)
        engine.update_execution_options(**{_WRITE_LOCK: threading.Lock()})

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn, _record) -> None:
            dbapi_conn.isolation_level = None  # SQLAlchemy's "begin" hook below issues BEGIN itself
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=FULL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA busy_timeout=30000")
            cur.close()

        @event.listens_for(engine, "begin")
        def _begin(conn) -> None:
            # A writer takes the write lock up front: two deferred transactions that both upgrade
            # to writers deadlock into "database is locked" instead of waiting their turn.
            conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get(_WRITES) else "BEGIN")

        return engine
    return create_engine(url, pool_size=pool_size, max_overflow=pool_size, pool_pre_ping=True)


def writer(engine: Engine) -> Engine:
    """``engine`` for write transactions (on SQLite they begin IMMEDIATE; elsewhere nothing changes)."""
    return engine.execution_options(**{_WRITES: True})


@contextmanager
def write_turn(engine: Engine) -> Iterator[None]:
    """Wait for this process's turn to write to ``engine``'s SQLite database (a no-op elsewhere).

    SQLite has one writer at a time. Threads that queue here wake as soon as the previous
    writer has committed, instead of polling the file lock from SQLite's busy handler; the
    busy timeout is left for writers in other processes (a migration, the Spark job).
    """
    lock = engine.get_execution_options().get(_WRITE_LOCK)
    with lock if lock is not None else nullcontext():
        yield


class WriteSessions:
    """Sessions for write transactions: ``with writes.begin() as session: ...`` commits on exit.

    On SQLite the whole transaction, from BEGIN IMMEDIATE to the end of COMMIT, runs inside
    ``write_turn``; on PostgreSQL writers run concurrently as before.
    """

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._sessions = sessionmaker(writer(engine), expire_on_commit=False)

    @contextmanager
    def begin(self) -> Iterator[Session]:
        with write_turn(self._engine), self._sessions.begin() as session:
            yield session


T = TypeVar("T")
R = TypeVar("R")


def together_or_each_alone(batch: list[T], together: Callable[[list[T]], list[R]],
                           alone: Callable[[T], R]) -> list[R | Exception]:
    """Write ``batch`` in one transaction; if one item's data stops it, write each item alone.

    A group commit's batch function (``halfmq.client.database_writes``): per item, its result or
    the exception its own write raised. A constraint or a value out of range rolls the
    whole batch back, so every item is redone alone and the bad one fails only itself.
    Any other error (the database is down or locked) is raised: nothing of the batch was
    committed, and every caller of the batch gets it.
    """
    if len(batch) > 1:
        try:
            return together(batch)
        except (IntegrityError, DataError):
            pass
    outcomes: list[R | Exception] = []
    for item in batch:
        try:
            outcomes.append(alone(item))
        except Exception as exc:  # noqa: BLE001 - this item's own failure, handed to its caller
            outcomes.append(exc)
    return outcomes


def alembic_config(name: str, url: str) -> Config:
    cfg = Config(str(MIGRATIONS / "alembic.ini"), ini_section=name)
    cfg.attributes["url"] = url
    return cfg


def migrate(name: str, engine: Engine, revision: str = "head") -> None:
    """Bring the database to ``revision`` (services run this at start)."""
    cfg = alembic_config(name, str(engine.url))
    with write_turn(engine), writer(engine).begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, revision)


def downgrade(name: str, engine: Engine, revision: str) -> None:
    cfg = alembic_config(name, str(engine.url))
    with write_turn(engine), writer(engine).begin() as conn:
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, revision)


def is_migrated(name: str, engine: Engine) -> bool:
    head = ScriptDirectory.from_config(alembic_config(name, str(engine.url))).get_current_head()
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision() == head


class UtcDateTime(TypeDecorator):
    """Timestamps always come back timezone-aware in UTC (SQLite stores them without an offset)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect) -> datetime | None:
        if value is not None and value.tzinfo is None:
            raise ValueError("naive datetime: use datetime.now(timezone.utc)")
        return value.astimezone(UTC) if value is not None else None

    def process_result_value(self, value: datetime | None, dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def run_alembic_env(context, metadata, default_url: str) -> None:
    """The body of both migrations/*/env.py: use the caller's connection, or connect to the URL."""
    config = context.config
    connection = config.attributes.get("connection")
    if connection is not None:
        context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()
        return
    url = config.attributes.get("url") or context.get_x_argument(as_dictionary=True).get("url") or default_url
    engine = create_engine(url)
    with engine.connect() as conn:
        context.configure(connection=conn, target_metadata=metadata, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()
