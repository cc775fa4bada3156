"""The Spark job: per-user and per-day credit totals, and order ↔ credit reconciliation (DESIGN section 9).

Two halves, kept apart on purpose:

* pure functions over DataFrames — :func:`aggregate`, :func:`reconcile`, :func:`normalize_credits` — and
  over plain values — :func:`to_jdbc`, :func:`jdbc_classpath` — that tests drive with hand-made data;
* :func:`run` / :func:`main`, which only do I/O: start Spark, read the ledger with Spark's JDBC source
  (partitioned on ``credit_records.id``), publish the summary to the credit database in one transaction,
  write Parquet and the reconciliation report.

Run it as ``halfmq aggregate``, ``python -m jobs.credit_aggregate`` or ``spark-submit jobs/credit_aggregate.py``.
Exit code: 0 when the reconciliation is clean, 1 when it found problems, 2 on errors.

This module imports nothing from ``services`` (an import-linter contract): it knows the tables only by
their names and columns.
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import os
import re
import shutil
import sys
import time
import traceback
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

if TYPE_CHECKING:  # pyspark is imported lazily: `halfmq --help` and the driver checks must not need it
    from pyspark.sql import Column, DataFrame, SparkSession
    from sqlalchemy import Engine

log = logging.getLogger("halfmq.aggregate")

APP_NAME = "halfmq-credit-aggregate"
EXIT_CLEAN, EXIT_PROBLEMS, EXIT_ERROR = 0, 1, 2


# --------------------------------------------------------------------------------------------------
# settings


class AggregateSettings(BaseSettings):
    """Where the job reads and writes; every value has a default that works with `halfmq up`'s files."""

    model_config = SettingsConfigDict(populate_by_name=True, extra="ignore")

    spark_master: str = Field("local[*]", validation_alias="SPARK_MASTER")
    credit_database_url: str = Field("sqlite:///./data/credit.db", validation_alias="CREDIT_DATABASE_URL")
    order_database_url: str = Field("sqlite:///./data/order.db", validation_alias="ORDER_DATABASE_URL")
    output_dir: str = Field("./data/spark", validation_alias="AGGREGATE_OUTPUT_DIR")
    partitions: int = Field(4, ge=1, le=1024, validation_alias="AGGREGATE_PARTITIONS",
                            description="JDBC read partitions of the ledger, and shuffle partitions")
    spark_jdbc_packages: str | None = Field(None, validation_alias="SPARK_JDBC_PACKAGES",
                                            description="Maven coordinates (comma-separated) for spark.jars.packages")
    spark_jdbc_jars: str | None = Field(None, validation_alias="SPARK_JDBC_JARS",
                                        description="comma-separated local JDBC driver jars, instead of Debian's")
    keep_runs: int = Field(2, ge=1, validation_alias="AGGREGATE_KEEP_RUNS",
                           description="published runs (and Parquet run directories) kept, the newest included")
    driver_host: str = Field("127.0.0.1", validation_alias="AGGREGATE_DRIVER_HOST",
                             description="address the driver binds to and advertises to executors")
    driver_memory: str = Field("2g", validation_alias="AGGREGATE_DRIVER_MEMORY",
                               description="spark.driver.memory (local mode: the executors live in the driver)")
    java_options: str = Field("-XX:TieredStopAtLevel=1", validation_alias="AGGREGATE_JAVA_OPTIONS",
                              description="spark.driver.extraJavaOptions; the default (C1 JIT only) saves ~2 s of "
                                          "JVM warm-up on a short job; set it empty for long jobs over huge ledgers")


# --------------------------------------------------------------------------------------------------
# pure: database URLs and JDBC drivers


class AggregateError(Exception):
    """A problem the user can fix (configuration, missing driver, missing database); exit code 2."""


class JdbcDriverMissing(AggregateError):
    pass


@dataclass(frozen=True)
class JdbcTarget:
    """A database as Spark's JDBC source wants it; credentials are properties, never part of ``url``."""

    dialect: str  # "sqlite" | "postgresql"
    url: str
    driver: str
    properties: dict[str, str] = field(default_factory=dict, repr=False)  # may hold the password

    def options(self) -> dict[str, str]:
        return {"url": self.url, "driver": self.driver, **self.properties}

    def __str__(self) -> str:
        return self.url


JDBC_DRIVERS = {"sqlite": "org.sqlite.JDBC", "postgresql": "org.postgresql.Driver"}
# Debian's jars (and the package that installs each), and the Maven coordinates to use instead where
# Maven Central is reachable. Debian's sqlite-jdbc loads its native part from libxerial-sqlite-jdbc-jni,
# which the -java package depends on; the Maven jar carries its own native libraries.
DEBIAN_JARS = {
    "sqlite": ("/usr/share/java/sqlite-jdbc.jar", "libxerial-sqlite-jdbc-java"),
    "postgresql": ("/usr/share/java/postgresql.jar", "libpostgresql-jdbc-java"),
}
MAVEN_PACKAGES = {"sqlite": "org.xerial:sqlite-jdbc:3.46.1.3", "postgresql": "org.postgresql:postgresql:42.7.4"}
# libpq-style query parameters of a SQLAlchemy URL → pgjdbc connection properties
_PG_PARAMS = {"sslmode": "sslmode", "sslrootcert": "sslrootcert", "sslcert": "sslcert", "sslkey": "sslkey",
              "sslpassword": "sslpassword", "application_name": "ApplicationName", "connect_timeout": "connectTimeout",
              "options": "options"}


def dialect_of(sqlalchemy_url: str) -> str:
    from sqlalchemy.engine import make_url

    try:
        backend = make_url(sqlalchemy_url).get_backend_name()
    except Exception as exc:  # noqa: BLE001 - sqlalchemy raises ArgumentError and friends
        raise AggregateError(f"not a database URL: {sqlalchemy_url!r} ({exc})") from None
    if backend in ("postgresql", "postgres"):
        return "postgresql"
    if backend == "sqlite":
        return "sqlite"
    raise AggregateError(f"the Spark job supports SQLite and PostgreSQL, not {backend!r} ({sqlalchemy_url!r})")


def to_jdbc(sqlalchemy_url: str, cwd: str | None = None) -> JdbcTarget:
    """SQLAlchemy URL → JDBC URL, driver class and connection properties.

    ``sqlite:///rel.db`` is made absolute against ``cwd`` (Spark executors run elsewhere);
    ``postgresql+psycopg://user:pw@host:port/db?sslmode=require`` → ``jdbc:postgresql://host:port/db`` with
    user, password and sslmode as properties.
    """
    from sqlalchemy.engine import make_url

    dialect = dialect_of(sqlalchemy_url)
    url = make_url(sqlalchemy_url)
    if dialect == "sqlite":
        database = url.database or ""
        if database in ("", ":memory:") or database.startswith("file::memory:"):
            raise AggregateError(f"an in-memory SQLite database cannot be read by Spark: {sqlalchemy_url!r}")
        if database.startswith("file:"):
            raise AggregateError(f"SQLite URI filenames are not supported by the job, give a path: {sqlalchemy_url!r}")
        path = os.path.normpath(os.path.join(cwd or os.getcwd(), database))
        return JdbcTarget("sqlite", f"jdbc:sqlite:{path}", JDBC_DRIVERS["sqlite"])
    if not url.database:
        raise AggregateError(f"no database name in {url.render_as_string(hide_password=True)!r}")
    if "host" in url.query and not url.host:
        raise AggregateError("PostgreSQL over a Unix socket is not supported by JDBC; give host and port")
    host = url.host or "localhost"
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    properties: dict[str, str] = {}
    if url.username:
        properties["user"] = url.username
    if url.password:
        properties["password"] = str(url.password)
    for key, value in url.query.items():
        value = value[-1] if isinstance(value, tuple) else value
        properties[_PG_PARAMS.get(key, key)] = str(value)
    return JdbcTarget("postgresql", f"jdbc:postgresql://{host}:{url.port or 5432}/{url.database}",
                      JDBC_DRIVERS["postgresql"], properties)


@dataclass(frozen=True)
class DriverClasspath:
    jars: tuple[str, ...] = ()
    packages: str | None = None


def jdbc_classpath(settings: AggregateSettings, dialects: Iterable[str], *, missing_ok: bool = False,
                   exists=os.path.isfile) -> DriverClasspath:  # noqa: ANN001 - injectable for tests
    """Which JDBC driver jars Spark gets: ``SPARK_JDBC_PACKAGES`` from Maven, else local jars that must exist."""
    wanted = sorted(set(dialects))
    if settings.spark_jdbc_packages:
        return DriverClasspath(packages=settings.spark_jdbc_packages.strip())
    if settings.spark_jdbc_jars:
        jars = tuple(j.strip() for j in settings.spark_jdbc_jars.split(",") if j.strip())
        absent = [j for j in jars if not exists(j)]
        if absent and not missing_ok:
            raise JdbcDriverMissing(f"SPARK_JDBC_JARS names jar(s) that do not exist: {', '.join(absent)}")
        return DriverClasspath(jars=tuple(j for j in jars if exists(j)))
    jars: list[str] = []
    for dialect in wanted:
        jar, package = DEBIAN_JARS[dialect]
        if exists(jar):
            jars.append(jar)
        elif not missing_ok:
            raise JdbcDriverMissing(
                f"the {dialect} JDBC driver jar {jar} is missing. Install it with "
                f"`apt-get install {package}`, or let Spark fetch it from Maven Central with "
                f"SPARK_JDBC_PACKAGES={MAVEN_PACKAGES[dialect]} (or point SPARK_JDBC_JARS at a jar you have)."
            )
    return DriverClasspath(jars=tuple(jars))


# --------------------------------------------------------------------------------------------------
# pure: DataFrame transformations

def parse_utc_timestamp(column: Column) -> Column:
    """Timestamp text → TIMESTAMP, strings without an offset taken as UTC whatever the session time zone.

    SQLAlchemy writes ``2026-11-22 06:52:00.123456`` into SQLite (UTC, no offset); other writers may add
    ``+00:00``, ``-0500`` or ``Z``. (String tests, not a regex: a regex costs about a second per million rows.)
    """
    from pyspark.sql import functions as F

    text = F.trim(column)
    clock = F.substring(text, 12, 64)  # what follows "YYYY-MM-DD" and its separator
    has_offset = text.endswith("Z") | text.endswith("z") | clock.contains("+") | clock.contains("-")
    return F.when(has_offset, text).otherwise(F.concat(text, F.lit("Z"))).cast("timestamp")


def normalize_credits(raw: DataFrame) -> DataFrame:
    """The ledger as read from any database → ``id long, order_id, user_id, points long, created_at timestamp``."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType

    created = F.col("created_at")
    if isinstance(raw.schema["created_at"].dataType, StringType):
        created = parse_utc_timestamp(created)
    return raw.select(
        F.col("id").cast("long").alias("id"),
        F.col("order_id").cast("string").alias("order_id"),
        F.col("user_id").cast("string").alias("user_id"),
        F.col("points").cast("long").alias("points"),
        created.cast("timestamp").alias("created_at"),
    )


def utc_day(column: Column) -> Column:
    """The UTC calendar day of a timestamp, independent of ``spark.sql.session.timeZone``."""
    from pyspark.sql import functions as F

    return F.date_from_unix_date(F.floor(F.unix_seconds(column) / F.lit(86400)).cast("int"))


def ledger_buckets(credits: DataFrame) -> DataFrame:
    """The ledger folded to one row per (user, UTC day): ``user_id, day, points, orders, first_at, last_at``.

    Both summaries derive from it, so the ledger is scanned once; it has at most users × days rows.
    """
    from pyspark.sql import functions as F

    return credits.groupBy("user_id", utc_day(F.col("created_at")).alias("day")).agg(
        F.sum("points").cast("long").alias("points"),
        F.count(F.lit(1)).alias("orders"),
        F.min("created_at").alias("first_at"),
        F.max("created_at").alias("last_at"),
    )


def aggregate_buckets(buckets: DataFrame) -> tuple[DataFrame, DataFrame]:
    """Per-user and per-day totals from :func:`ledger_buckets`."""
    from pyspark.sql import functions as F

    users = (
        buckets.groupBy("user_id")
        .agg(
            F.sum("points").cast("long").alias("points"),
            F.sum("orders").cast("long").alias("orders"),
            F.min("first_at").alias("first_credit_at"),
            F.max("last_at").alias("last_credit_at"),
        )
        .orderBy("user_id")
    )
    days = (
        buckets.groupBy("day")
        .agg(F.sum("points").cast("long").alias("points"), F.sum("orders").cast("long").alias("orders"))
        .orderBy("day")
    )
    return users, days


def aggregate(credits: DataFrame) -> tuple[DataFrame, DataFrame]:
    """Per-user and per-day totals of the ledger.

    ``credits`` has at least ``user_id, points, created_at`` (one row per credited order). Returns
    ``users(user_id, points, orders, first_credit_at, last_credit_at)`` ordered by user and
    ``days(day, points, orders)`` ordered by day, ``day`` being the UTC date of ``created_at``.
    """
    return aggregate_buckets(ledger_buckets(credits))


@dataclass(frozen=True)
class Reconciliation:
    orders_committed: int
    credits: int
    missing_credits: list[str]
    orphan_credits: list[str]
    balance_mismatches: list[dict[str, Any]]

    @property
    def clean(self) -> bool:
        return not (self.missing_credits or self.orphan_credits or self.balance_mismatches)

    def as_dict(self, checked_at: datetime | None = None) -> dict[str, Any]:
        """DESIGN section 9's report shape (``checked_at`` is None when not given)."""
        return {
            "checked_at": checked_at.isoformat() if checked_at else None,
            "orders_committed": self.orders_committed,
            "credits": self.credits,
            "missing_credits": list(self.missing_credits),
            "orphan_credits": list(self.orphan_credits),
            "balance_mismatches": [dict(m) for m in self.balance_mismatches],
        }


def reconcile(orders: DataFrame, credits: DataFrame, accounts: DataFrame, ledger: DataFrame | None = None) -> Reconciliation:
    """Committed orders ↔ credits ↔ balances.

    ``orders(order_id)`` — every row is a committed order; ``credits(order_id, user_id, points)``;
    ``accounts(user_id, balance)``. Missing credits are orders without a credit, orphan credits are
    credits without an order, a balance mismatch is an account whose balance differs from the sum of
    its ledger points (a user with ledger points but no account counts with balance 0).
    ``ledger(user_id, points)`` — the ledger's points per user — may be given when already computed
    (the per-user summary is exactly that); by default it is summed from ``credits``.
    """
    from pyspark.sql import functions as F

    # one pass over both id sets: the counts and both kinds of gap together
    order_ids = orders.select("order_id", F.lit(True).alias("_ordered"))
    credit_ids = credits.select("order_id", F.lit(True).alias("_credited"))
    stats = (
        order_ids.join(credit_ids, "order_id", "full_outer")
        .agg(
            F.count("_ordered").alias("orders"),
            F.count("_credited").alias("credits"),
            F.collect_list(F.when(F.col("_credited").isNull(), F.col("order_id"))).alias("missing"),
            F.collect_list(F.when(F.col("_ordered").isNull(), F.col("order_id"))).alias("orphans"),
        )
        .collect()[0]
    )

    if ledger is None:
        ledger = credits.groupBy("user_id").agg(F.sum("points").alias("points"))
    ledger = ledger.select("user_id", F.col("points").cast("long").alias("ledger_points"))
    balances = accounts.select("user_id", F.col("balance").cast("long").alias("balance"))
    mismatches = (
        balances.join(ledger, "user_id", "full_outer")
        .select("user_id", F.coalesce("balance", F.lit(0)).alias("balance"),
                F.coalesce("ledger_points", F.lit(0)).alias("ledger_points"))
        .where(F.col("balance") != F.col("ledger_points"))
        .orderBy("user_id")
        .collect()
    )
    return Reconciliation(
        orders_committed=int(stats["orders"]),
        credits=int(stats["credits"]),
        missing_credits=sorted(stats["missing"]),
        orphan_credits=sorted(stats["orphans"]),
        balance_mismatches=[{"user_id": r["user_id"], "balance": int(r["balance"]), "ledger_points": int(r["ledger_points"])}
                            for r in mismatches],
    )


# --------------------------------------------------------------------------------------------------
# I/O: Spark


def _require_pyspark() -> None:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise AggregateError("pyspark is not installed: `pip install 'pyspark>=4.0,<5'` (it needs Java 17 or newer)") from None


def build_spark(settings: AggregateSettings, *, dialects: Iterable[str] | None = None,
                missing_drivers_ok: bool = False) -> SparkSession:
    """The job's SparkSession (or the running one: Spark allows one per process).

    JDBC drivers must be on the classpath when the JVM starts, so every session a process creates should
    come from here with every dialect it will ever read.
    """
    _require_pyspark()
    from pyspark.sql import SparkSession

    if dialects is None:
        dialects = {dialect_of(settings.credit_database_url), dialect_of(settings.order_database_url)}
    classpath = jdbc_classpath(settings, dialects, missing_ok=missing_drivers_ok)
    if settings.driver_host in ("127.0.0.1", "localhost"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # else Spark warns about the hostname on start
    builder = SparkSession.builder
    # under spark-submit the JVM is already up with --master; only an explicit SPARK_MASTER/--master overrides it
    if not (submitted_by_spark_submit() and "spark_master" not in settings.model_fields_set):
        builder = builder.master(settings.spark_master)
    builder = (
        builder.appName(APP_NAME)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", str(settings.partitions))
        .config("spark.default.parallelism", str(settings.partitions))
        .config("spark.driver.bindAddress", settings.driver_host)
        .config("spark.driver.host", settings.driver_host)
        .config("spark.driver.memory", settings.driver_memory)
        .config("spark.pyspark.python", os.environ.get("PYSPARK_PYTHON", sys.executable))
        .config("spark.pyspark.driver.python", sys.executable)
    )
    if settings.java_options.strip():
        builder = builder.config("spark.driver.extraJavaOptions", settings.java_options.strip())
    if classpath.packages:
        builder = builder.config("spark.jars.packages", classpath.packages)
    elif classpath.jars:
        # spark.jars puts them on the driver's classpath and ships them to every executor
        builder = builder.config("spark.jars", ",".join(classpath.jars))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    ensure_jdbc_drivers(spark, dialects, classpath, required=not missing_drivers_ok)
    return spark


def submitted_by_spark_submit() -> bool:
    """True in a Python driver that spark-submit started (it hands over its JVM through these variables)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def _driver_loadable(spark: SparkSession, class_name: str) -> bool:
    jvm = spark.sparkContext._jvm
    try:
        loader = jvm.org.apache.spark.util.Utils.getContextOrSparkClassLoader()
        jvm.java.lang.Class.forName(class_name, False, loader)
        return True
    except Exception:  # noqa: BLE001 - py4j wraps ClassNotFoundException
        return False


def ensure_jdbc_drivers(spark: SparkSession, dialects: Iterable[str], classpath: DriverClasspath, required: bool = True) -> None:
    """Make sure the driver JVM can load each JDBC driver class.

    When the JVM was started before this code ran (``spark-submit jobs/credit_aggregate.py`` without
    ``--jars``, or an earlier session in the same process) ``spark.jars`` came too late: the jars are
    then added to the running session with ``ADD JAR``, which also ships them to the executors.
    """
    missing = [d for d in sorted(set(dialects)) if not _driver_loadable(spark, JDBC_DRIVERS[d])]
    if missing and classpath.jars:
        for jar in classpath.jars:
            spark.sql(f"ADD JAR '{jar}'")
        missing = [d for d in missing if not _driver_loadable(spark, JDBC_DRIVERS[d])]
    if missing and required:
        d = missing[0]
        raise JdbcDriverMissing(
            f"the Spark driver cannot load {JDBC_DRIVERS[d]}: the JVM was started without the {d} JDBC driver. "
            f"With spark-submit pass --jars {DEBIAN_JARS[d][0]} (or --packages {MAVEN_PACKAGES[d]})."
        )


@dataclass(frozen=True)
class IdBounds:
    low: int | None
    high: int | None
    rows: int


def read_partitions(bounds: IdBounds, partitions: int) -> int:
    """How many range queries Spark's JDBC source will issue for the ledger (it never splits finer than one id)."""
    if bounds.low is None or bounds.high is None or partitions <= 1 or bounds.high <= bounds.low:
        return 1
    return min(partitions, bounds.high + 1 - bounds.low)


def read_credits(spark: SparkSession, target: JdbcTarget, bounds: IdBounds, partitions: int) -> DataFrame:
    """The ledger through Spark's JDBC source, one query per range of ``id`` (``partitions`` of them).

    The bounds only spread the ranges: the first and last ranges are open-ended, so rows written after
    the min/max query are read too.
    """
    reader = spark.read.format("jdbc").options(**target.options()).option("dbtable", "credit_records").option("fetchsize", "10000")
    if read_partitions(bounds, partitions) > 1:
        reader = (reader.option("partitionColumn", "id").option("lowerBound", str(bounds.low))
                  .option("upperBound", str(bounds.high + 1)).option("numPartitions", str(partitions)))
    if target.dialect == "sqlite":
        # SQLite's declared DATETIME would come back as a DATE (time lost); BIGINT as decimal(20,0)
        reader = reader.option("customSchema", "id BIGINT, points BIGINT, created_at STRING")
    return normalize_credits(reader.load().select("id", "order_id", "user_id", "points", "created_at"))


def read_orders(spark: SparkSession, target: JdbcTarget) -> DataFrame:
    reader = spark.read.format("jdbc").options(**target.options()).option("dbtable", "orders").option("fetchsize", "10000")
    return reader.load().select("order_id")


def read_accounts(spark: SparkSession, target: JdbcTarget) -> DataFrame:
    from pyspark.sql import functions as F

    reader = spark.read.format("jdbc").options(**target.options()).option("dbtable", "credit_accounts")
    if target.dialect == "sqlite":
        reader = reader.option("customSchema", "balance BIGINT")
    return reader.load().select("user_id", F.col("balance").cast("long").alias("balance"))


# --------------------------------------------------------------------------------------------------
# I/O: SQLAlchemy (preflight and the atomic publish)


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
        def _pragmas(dbapi_conn, _record) -> None:  # noqa: ANN001
            dbapi_conn.isolation_level = None
            dbapi_conn.execute("PRAGMA busy_timeout=60000")

        @event.listens_for(engine, "begin")
        def _begin(conn) -> None:  # noqa: ANN001
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
    except Exception as exc:  # noqa: BLE001
        raise AggregateError(f"cannot read credit_records in {_safe(credit_url)}: {exc}") from exc
    finally:
        engine.dispose()
    engine = create_engine_for(order_url)
    try:
        with engine.connect() as conn:
            conn.execute(select(t["orders"].c.order_id).limit(1)).all()
    except Exception as exc:  # noqa: BLE001
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


def publish_summary(engine: Engine, run_id: str, computed_at: datetime, users: Sequence[dict[str, Any]],
                    days: Sequence[dict[str, Any]], keep_runs: int = 2) -> list[str]:
    """Publish one run in ONE transaction: its rows, then ``summary_current`` → it, then prune old runs.

    A reader that follows ``summary_current`` sees the previous run or this one, never a mix; if anything
    fails nothing changes. Returns the run ids removed.
    """
    from sqlalchemy import delete, insert, select

    t = tables()
    runs, cur = t["summary_runs"], t["summary_current"]
    if engine.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as upsert
    else:
        from sqlalchemy.dialects.sqlite import insert as upsert
    with engine.begin() as conn:
        conn.execute(insert(runs).values(run_id=run_id, computed_at=computed_at))
        if users:
            conn.execute(insert(t["summary_users"]), [{**u, "run_id": run_id} for u in users])
        if days:
            conn.execute(insert(t["summary_days"]), [{**d, "run_id": run_id} for d in days])
        stmt = upsert(cur).values(id=1, run_id=run_id)
        conn.execute(stmt.on_conflict_do_update(index_elements=[cur.c.id], set_={"run_id": stmt.excluded.run_id}))
        older = [r for r in conn.scalars(select(runs.c.run_id).order_by(runs.c.computed_at.desc(), runs.c.run_id.desc()))
                 if r != run_id]
        stale = older[max(keep_runs - 1, 0):]
        if stale:
            for name in ("summary_users", "summary_days", "summary_runs"):
                conn.execute(delete(t[name]).where(t[name].c.run_id.in_(stale)))
    return stale


# --------------------------------------------------------------------------------------------------
# I/O: files


def _write_atomically(path: Path, data: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(data)
    os.replace(tmp, path)


_RUN_DIR = re.compile(r"^\d{8}T\d{12}Z-[0-9a-f]{8}$")


def new_run_id(now: datetime) -> str:
    """Sortable by time: ``20261122T065200123456Z-1a2b3c4d``."""
    return f"{now.astimezone(timezone.utc):%Y%m%dT%H%M%S%f}Z-{uuid.uuid4().hex[:8]}"


def prune_run_dirs(output_dir: Path, keep: int) -> list[str]:
    runs = sorted((p for p in output_dir.iterdir() if p.is_dir() and _RUN_DIR.match(p.name)), key=lambda p: p.name)
    removed = runs[:-keep] if keep > 0 else runs
    for p in removed:
        shutil.rmtree(p, ignore_errors=True)
    return [p.name for p in removed]


# --------------------------------------------------------------------------------------------------
# the run


@dataclass
class AggregateResult:
    run_id: str
    computed_at: datetime
    users: list[dict[str, Any]]  # summary rows as published (datetimes UTC-aware)
    days: list[dict[str, Any]]
    reconciliation: Reconciliation
    report: dict[str, Any]  # DESIGN section 9's shape
    credits: int
    points: int
    parquet_dir: Path
    report_path: Path
    removed_runs: list[str]
    timings: dict[str, float]

    @property
    def clean(self) -> bool:
        return self.reconciliation.clean

    @property
    def exit_code(self) -> int:
        return EXIT_CLEAN if self.clean else EXIT_PROBLEMS


class _Stages:
    """Logs each stage as it starts and ends, with its wall time."""

    def __init__(self) -> None:
        self.timings: dict[str, float] = {}
        self.started = time.perf_counter()

    @contextmanager
    def __call__(self, name: str) -> Iterator[dict[str, Any]]:
        notes: dict[str, Any] = {}
        log.info("▶ %s …", name)
        t0 = time.perf_counter()
        yield notes
        self.timings[name] = round(time.perf_counter() - t0, 3)
        detail = ", ".join(f"{k}={v:,}" if isinstance(v, int) else f"{k}={v}" for k, v in notes.items())
        log.info("✔ %s in %.2fs%s", name, self.timings[name], f" ({detail})" if detail else "")

    def total(self) -> float:
        self.timings["total"] = round(time.perf_counter() - self.started, 3)
        return self.timings["total"]


def _micros_to_utc(us: int | None) -> datetime | None:
    return None if us is None else datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(microseconds=int(us))


def run(settings: AggregateSettings, spark: SparkSession | None = None) -> AggregateResult:
    """Read, aggregate, publish, write Parquet, reconcile. I/O only: the logic is in the pure functions.

    Pass ``spark`` to reuse a session (it must have been built with the JDBC drivers, see :func:`build_spark`);
    otherwise one is started and stopped here.
    """
    stage = _Stages()
    credit_db, order_db = to_jdbc(settings.credit_database_url), to_jdbc(settings.order_database_url)
    output_dir = Path(settings.output_dir).resolve()
    with stage("preflight") as notes:
        _require_pyspark()
        if spark is None:  # a given session already has its classpath; else check the jars before the JVM starts
            jdbc_classpath(settings, {credit_db.dialect, order_db.dialect})
        bounds = preflight(settings.credit_database_url, settings.order_database_url)
        notes.update(credit_db=str(credit_db), order_db=str(order_db), ledger_ids=f"{bounds.low}..{bounds.high}")
    own_spark = spark is None
    dialects = {credit_db.dialect, order_db.dialect}
    if own_spark:
        with stage("spark start") as notes:
            spark = build_spark(settings, dialects=dialects)
            notes.update(master=spark.sparkContext.master, version=spark.version)
    else:
        ensure_jdbc_drivers(spark, dialects, jdbc_classpath(settings, dialects, missing_ok=True))
    assert spark is not None
    cached: list[DataFrame] = []
    credit_engine = create_engine_for(settings.credit_database_url, write=True)
    credit_reader, order_reader = create_engine_for(settings.credit_database_url), create_engine_for(settings.order_database_url)
    try:
        with stage("read") as notes:
            # the partitioned scan of the ledger, folded on the fly into (user, day) buckets that stay cached:
            # the big table itself is never cached, and both summaries come from the buckets
            credits = read_credits(spark, credit_db, bounds, settings.partitions)
            buckets = ledger_buckets(credits).cache()
            cached.append(buckets)
            notes.update(buckets=buckets.count(), partitions=read_partitions(bounds, settings.partitions))

        with stage("aggregate") as notes:
            from pyspark.sql import functions as F

            users_df, days_df = aggregate_buckets(buckets)
            users_df, days_df = users_df.cache(), days_df.cache()
            cached += [users_df, days_df]
            users = [
                {"user_id": r["user_id"], "points": int(r["points"]), "orders": int(r["orders"]),
                 "first_credit_at": _micros_to_utc(r["first_us"]), "last_credit_at": _micros_to_utc(r["last_us"])}
                for r in users_df.select("user_id", "points", "orders", F.unix_micros("first_credit_at").alias("first_us"),
                                         F.unix_micros("last_credit_at").alias("last_us")).collect()
            ]
            days = [{"day": r["day"], "points": int(r["points"]), "orders": int(r["orders"])} for r in days_df.collect()]
            total_points = sum(u["points"] for u in users)
            total_credits = sum(u["orders"] for u in users)
            notes.update(credits=total_credits, users=len(users), days=len(days), points=total_points)

        computed_at = datetime.now(timezone.utc)
        run_id = new_run_id(computed_at)
        with stage("write-back") as notes:
            removed = publish_summary(credit_engine, run_id, computed_at, users, days, settings.keep_runs)
            notes.update(run_id=run_id, removed_runs=len(removed))

        with stage("parquet") as notes:
            run_dir = output_dir / run_id
            run_dir.mkdir(parents=True, exist_ok=True)
            users_df.coalesce(1).write.mode("overwrite").parquet(str(run_dir / "users"))
            days_df.coalesce(1).write.mode("overwrite").parquet(str(run_dir / "days"))
            _write_atomically(output_dir / "latest", run_id + "\n")
            pruned = prune_run_dirs(output_dir, settings.keep_runs)
            notes.update(dir=str(run_dir), pruned=len(pruned))

        with stage("reconcile") as notes:
            checked_at = datetime.now(timezone.utc)
            orders = read_orders(spark, order_db)
            accounts = read_accounts(spark, credit_db)
            # the ledger per user is the summary's (no second scan); what the services changed since the scans
            # is sorted out by the re-check, which confirms each candidate against the live databases
            candidates = reconcile(orders, credits, accounts, ledger=users_df.select("user_id", "points"))
            rec, cleared = recheck(candidates, credit_reader, order_reader)
            report = rec.as_dict(checked_at)
            text = json.dumps(report, indent=2)
            _write_atomically(output_dir / "reconciliation.json", text + "\n")
            _write_atomically(run_dir / "reconciliation.json", text + "\n")
            notes.update(orders=rec.orders_committed, credits=rec.credits, missing=len(rec.missing_credits),
                         orphans=len(rec.orphan_credits), mismatches=len(rec.balance_mismatches))
            if any(cleared.values()):
                notes.update(cleared_on_recheck=", ".join(f"{k} {v}" for k, v in cleared.items() if v))
    finally:
        for df in cached:
            try:
                df.unpersist()
            except Exception:  # noqa: BLE001 - the session may be gone already
                pass
        for engine in (credit_engine, credit_reader, order_reader):
            engine.dispose()
        if own_spark:
            spark.stop()
    log.info("done in %.2fs: %s", stage.total(), ", ".join(f"{k} {v:.2f}s" for k, v in stage.timings.items() if k != "total"))
    return AggregateResult(run_id=run_id, computed_at=computed_at, users=users, days=days, reconciliation=rec,
                           report=report, credits=total_credits, points=total_points, parquet_dir=run_dir,
                           report_path=output_dir / "reconciliation.json", removed_runs=removed, timings=stage.timings)


# --------------------------------------------------------------------------------------------------
# presentation and entry points


def print_report(result: AggregateResult, console=None, limit: int = 20) -> None:  # noqa: ANN001
    """The reconciliation as a rich table, then the report's JSON, on stdout."""
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    rec = result.reconciliation
    table = Table(title=f"credit aggregation {result.run_id}", show_header=True)
    table.add_column("check")
    table.add_column("count", justify="right")
    table.add_column("detail")

    def ids(values: list[Any]) -> str:
        shown = ", ".join(str(v) for v in values[:limit])
        return shown + (f" … (+{len(values) - limit})" if len(values) > limit else "")

    ok, bad = "[green]ok[/]", "[red]{}[/]"
    table.add_row("committed orders", f"{rec.orders_committed:,}", "")
    table.add_row("credits", f"{rec.credits:,}", f"{result.points:,} points, {len(result.users):,} users, {len(result.days):,} days")
    table.add_row("missing credits", bad.format(len(rec.missing_credits)) if rec.missing_credits else ok, ids(rec.missing_credits))
    table.add_row("orphan credits", bad.format(len(rec.orphan_credits)) if rec.orphan_credits else ok, ids(rec.orphan_credits))
    table.add_row("balance mismatches", bad.format(len(rec.balance_mismatches)) if rec.balance_mismatches else ok,
                  ids([f"{m['user_id']} (balance {m['balance']}, ledger {m['ledger_points']})" for m in rec.balance_mismatches]))
    console.print(table)
    timings = ", ".join(f"{k} {v:.2f}s" for k, v in result.timings.items())
    console.print(f"summary published as run {result.run_id}; Parquet in {result.parquet_dir}; report {result.report_path}")
    console.print(f"timings: {timings}")
    console.print_json(json.dumps(result.report))


def _error_line(exc: BaseException) -> str:
    """One readable line: for a Java error (JDBC, Spark internals) the Java exception, not py4j's wrapper."""
    java = getattr(exc, "java_exception", None)
    if java is not None:
        try:
            return str(java.toString()).strip().splitlines()[0]
        except Exception:  # noqa: BLE001 - the JVM may be gone
            pass
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""


def execute(settings: AggregateSettings, spark: SparkSession | None = None, console=None) -> int:  # noqa: ANN001
    """Run, print, and turn the outcome into an exit code (0 clean, 1 problems found, 2 error)."""
    from rich.console import Console

    console = console or Console()
    try:
        result = run(settings, spark)
    except AggregateError as exc:
        Console(stderr=True).print(f"[red]aggregate failed:[/] {exc}", highlight=False, soft_wrap=True)
        return EXIT_ERROR
    except Exception as exc:  # noqa: BLE001 - Spark, JDBC and database errors all end here
        traceback.print_exc()
        first = _error_line(exc)
        Console(stderr=True).print(f"[red]aggregate failed:[/] {type(exc).__name__}: {first[:500]}", highlight=False, soft_wrap=True)
        return EXIT_ERROR
    print_report(result, console)
    return result.exit_code


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--master", help="Spark master (default SPARK_MASTER or local[*])")
    parser.add_argument("--credit-db", help="credit database SQLAlchemy URL (default CREDIT_DATABASE_URL)")
    parser.add_argument("--order-db", help="order database SQLAlchemy URL (default ORDER_DATABASE_URL)")
    parser.add_argument("--output-dir", help="Parquet and report directory (default AGGREGATE_OUTPUT_DIR or ./data/spark)")
    parser.add_argument("--partitions", type=int, help="JDBC read and shuffle partitions (default AGGREGATE_PARTITIONS or 4)")


def settings_from_args(args: argparse.Namespace) -> AggregateSettings:
    overrides = {"spark_master": args.master, "credit_database_url": args.credit_db, "order_database_url": args.order_db,
                 "output_dir": None if args.output_dir is None else str(args.output_dir),
                 "partitions": getattr(args, "partitions", None)}
    return AggregateSettings(**{k: v for k, v in overrides.items() if v is not None})


def configure_logging() -> None:
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)-7s %(name)s: %(message)s", stream=sys.stderr)
    log.setLevel(logging.INFO)
    for chatty in ("py4j", "py4j.clientserver", "py4j.java_gateway"):
        logging.getLogger(chatty).setLevel(logging.WARNING)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="credit_aggregate", description=__doc__.splitlines()[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    configure_logging()
    try:
        settings = settings_from_args(args)
    except ValidationError as exc:
        print(f"aggregate: bad settings: {exc}", file=sys.stderr)
        return EXIT_ERROR
    return execute(settings)


if __name__ == "__main__":
    sys.exit(main())
