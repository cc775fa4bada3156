"""The Spark job: per-user and per-day credit totals, and order ↔ credit reconciliation (DESIGN section 9).

Two halves, kept apart on purpose (an import-linter contract keeps the first free of I/O):

* pure functions over DataFrames — ``transforms`` (:func:`aggregate`, :func:`normalize_credits`) and
  ``reconciliation`` (:func:`reconcile`) — and over plain values — ``jdbc`` (:func:`to_jdbc`,
  :func:`jdbc_classpath`) — that tests drive with hand-made data;
* the I/O: ``spark_io`` starts Spark and reads the ledger with Spark's JDBC source (partitioned on
  ``credit_records.id``), ``databases`` checks and re-checks with SQLAlchemy, ``publishing`` publishes
  the summary to the credit database in one transaction and writes the run's files; ``stages`` and
  ``run`` string them together, ``cli`` is the command line.

Run it as ``halfmq aggregate``, ``python -m halfmq.jobs.credit_aggregate`` or
``spark-submit jobs/credit_aggregate/__main__.py``. Exit code: 0 when the reconciliation is clean,
1 when it found problems, 2 on errors.

It imports nothing from ``services`` (an import-linter contract): it knows the tables only by their
names and columns. The names below are the job's public face, re-exported for its callers.
"""

from .cli import add_arguments, configure_logging, execute, main, print_report, settings_from_args
from .databases import create_engine_for, preflight, recheck, tables
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
    to_jdbc,
)
from .publishing import new_run_id, prune_run_dirs, publish_summary
from .reconciliation import Reconciliation, TopicAgreement, reconcile, topic_agreement
from .run import AggregateResult, run
from .settings import APP_NAME, EXIT_CLEAN, EXIT_ERROR, EXIT_PROBLEMS, AggregateSettings
from .spark_io import build_spark, ensure_jdbc_drivers, read_accounts, read_credits, read_orders, submitted_by_spark_submit
from .transforms import aggregate, aggregate_buckets, ledger_buckets, normalize_credits, parse_utc_timestamp, topic_credits, utc_day

__all__ = [
    "APP_NAME", "DEBIAN_JARS", "EXIT_CLEAN", "EXIT_ERROR", "EXIT_PROBLEMS", "JDBC_DRIVERS", "MAVEN_PACKAGES",
    "AggregateError", "AggregateResult", "AggregateSettings", "DriverClasspath", "IdBounds", "JdbcDriverMissing",
    "JdbcTarget", "Reconciliation", "TopicAgreement", "add_arguments", "aggregate", "aggregate_buckets", "build_spark",
    "configure_logging", "create_engine_for", "dialect_of", "ensure_jdbc_drivers", "execute", "jdbc_classpath",
    "ledger_buckets", "main", "new_run_id", "normalize_credits", "parse_utc_timestamp", "preflight", "print_report",
    "prune_run_dirs", "publish_summary", "read_accounts", "read_credits", "read_orders", "read_partitions", "recheck",
    "reconcile", "run", "settings_from_args", "submitted_by_spark_submit", "tables", "to_jdbc", "topic_agreement", "topic_credits", "utc_day",
]
