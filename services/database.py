"""Engines and migrations shared by the services (each service has its own database)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import DateTime, Engine, TypeDecorator, create_engine, event
from sqlalchemy.engine import make_url

ROOT = Path(__file__).resolve().parents[1]


def create_db_engine(url: str, pool_size: int = 20) -> Engine:
    """An engine tuned for the service's concurrency; SQLite gets WAL, a busy timeout and FK checks."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"timeout": 30, "check_same_thread": False}, pool_size=pool_size, max_overflow=pool_size)

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn, _record) -> None:  # noqa: ANN001
            dbapi_conn.isolation_level = None  # SQLAlchemy's "begin" hook below issues BEGIN itself
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=FULL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA busy_timeout=30000")
            cur.close()

        @event.listens_for(engine, "begin")
        def _begin_immediate(conn) -> None:  # noqa: ANN001
            # Take the write lock up front: two deferred transactions that both upgrade to
            # writers deadlock into "database is locked" instead of waiting their turn.
            conn.exec_driver_sql("BEGIN IMMEDIATE")

        return engine
    return create_engine(url, pool_size=pool_size, max_overflow=pool_size, pool_pre_ping=True)


def alembic_config(name: str, url: str) -> Config:
    cfg = Config(str(ROOT / "alembic.ini"), ini_section=name)
    cfg.set_main_option("script_location", str(ROOT / "migrations" / name))
    cfg.attributes["url"] = url
    return cfg


def migrate(name: str, engine: Engine, revision: str = "head") -> None:
    """Bring the database to ``revision`` (services run this at start)."""
    cfg = alembic_config(name, str(engine.url))
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, revision)


def downgrade(name: str, engine: Engine, revision: str) -> None:
    cfg = alembic_config(name, str(engine.url))
    with engine.begin() as conn:
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

    def process_bind_param(self, value: datetime | None, dialect) -> datetime | None:  # noqa: ANN001
        if value is not None and value.tzinfo is None:
            raise ValueError("naive datetime: use datetime.now(timezone.utc)")
        return value.astimezone(timezone.utc) if value is not None else None

    def process_result_value(self, value: datetime | None, dialect) -> datetime | None:  # noqa: ANN001
        if value is None:
            return None
        return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)


def run_alembic_env(context, metadata, default_url: str) -> None:  # noqa: ANN001
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
