"""The job's Spark side: the session with its JDBC drivers, and the JDBC reads of the three tables."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING

from .jdbc import (
    DEBIAN_JARS,
    JDBC_DRIVERS,
    MAVEN_PACKAGES,
    AggregateError,
    DriverClasspath,
    IdBounds,
    JdbcDriverMissing,
    JdbcTarget,
    dialect_of,
    jdbc_classpath,
    read_partitions,
)
from .settings import APP_NAME, AggregateSettings
from .transforms import normalize_credits

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def require_pyspark() -> None:
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
    require_pyspark()
    from pyspark.sql import SparkSession

    if dialects is None:
        dialects = {dialect_of(settings.credit_database_url), dialect_of(settings.order_database_url)}
    classpath = jdbc_classpath(settings, dialects, missing_ok=missing_drivers_ok)
    if settings.driver_host in ("127.0.0.1", "localhost"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # else Spark warns about the hostname on start
    # the JVM starts Python workers for a Python data source's planning (halfmq.spark) from this variable, not from the conf
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
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

    When the JVM was started before this code ran (``spark-submit jobs/credit_aggregate/__main__.py`` without
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
