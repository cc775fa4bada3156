"""The job's stages, one function each; ``run`` strings them together and times them.

Each only does I/O around the pure functions of ``transforms`` and ``reconciliation``; ``notes`` collects
what the stage's log line reports.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .databases import preflight, recheck
from .jdbc import IdBounds, JdbcTarget, jdbc_classpath, read_partitions
from .publishing import prune_run_dirs, write_atomically
from .reconciliation import Reconciliation, TopicAgreement, reconcile, topic_agreement
from .settings import AggregateSettings
from .spark_io import read_accounts, read_credits, read_orders, require_pyspark
from .transforms import aggregate_buckets, ledger_buckets, topic_credits

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


@dataclass
class Summary:
    """The aggregate stage's output: the cached DataFrames and their rows as published."""

    users_df: DataFrame
    days_df: DataFrame
    users: list[dict[str, Any]]
    days: list[dict[str, Any]]
    credits: int = field(init=False)
    points: int = field(init=False)

    def __post_init__(self) -> None:
        self.points = sum(u["points"] for u in self.users)
        self.credits = sum(u["orders"] for u in self.users)


def _micros_to_utc(us: int | None) -> datetime | None:
    return None if us is None else datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=int(us))


def check_sources(settings: AggregateSettings, spark: SparkSession | None, credit_db: JdbcTarget, order_db: JdbcTarget,
                  notes: dict[str, Any]) -> IdBounds:
    """Fail before the JVM starts: pyspark, the driver jars (unless a session brings its own), both databases."""
    require_pyspark()
    if spark is None:
        jdbc_classpath(settings, {credit_db.dialect, order_db.dialect})
    bounds = preflight(settings.credit_database_url, settings.order_database_url)
    notes.update(credit_db=str(credit_db), order_db=str(order_db), ledger_ids=f"{bounds.low}..{bounds.high}")
    return bounds


def read_ledger(spark: SparkSession, credit_db: JdbcTarget, bounds: IdBounds, partitions: int,
                cached: list[DataFrame], notes: dict[str, Any]) -> tuple[DataFrame, DataFrame]:
    """The partitioned scan of the ledger, folded on the fly into (user, day) buckets that stay cached.

    The big table itself is never cached; both summaries come from the buckets.
    """
    credits = read_credits(spark, credit_db, bounds, partitions)
    buckets = ledger_buckets(credits).cache()
    cached.append(buckets)
    notes.update(buckets=buckets.count(), partitions=read_partitions(bounds, partitions))
    return credits, buckets


def summarize(buckets: DataFrame, cached: list[DataFrame], notes: dict[str, Any]) -> Summary:
    from pyspark.sql import functions as F

    users_df, days_df = (df.cache() for df in aggregate_buckets(buckets))
    cached += [users_df, days_df]
    users = [
        {"user_id": r["user_id"], "points": int(r["points"]), "orders": int(r["orders"]),
         "first_credit_at": _micros_to_utc(r["first_us"]), "last_credit_at": _micros_to_utc(r["last_us"])}
        for r in users_df.select("user_id", "points", "orders", F.unix_micros("first_credit_at").alias("first_us"),
                                 F.unix_micros("last_credit_at").alias("last_us")).collect()
    ]
    days = [{"day": r["day"], "points": int(r["points"]), "orders": int(r["orders"])} for r in days_df.collect()]
    summary = Summary(users_df, days_df, users, days)
    notes.update(credits=summary.credits, users=len(users), days=len(days), points=summary.points)
    return summary


def write_parquet(summary: Summary, output_dir: Path, run_id: str, keep_runs: int, notes: dict[str, Any]) -> Path:
    run_dir = output_dir / run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    summary.users_df.coalesce(1).write.mode("overwrite").parquet(str(run_dir / "users"))
    summary.days_df.coalesce(1).write.mode("overwrite").parquet(str(run_dir / "days"))
    write_atomically(output_dir / "latest", run_id + "\n")
    pruned = prune_run_dirs(output_dir, keep_runs)
    notes.update(dir=str(run_dir), pruned=len(pruned))
    return run_dir


def reconcile_and_report(spark: SparkSession, credit_db: JdbcTarget, order_db: JdbcTarget, credits: DataFrame,
                         summary: Summary, readers: tuple[Any, Any], report_paths: list[Path],
                         notes: dict[str, Any], extra: dict[str, Any] | None = None) -> tuple[Reconciliation, dict[str, Any]]:
    """Reconcile, re-check each candidate against the live databases, write the report to ``report_paths``.

    The ledger per user is the summary's (no second scan); what the services changed since the scans is
    sorted out by the re-check. ``extra`` joins the report (the topic mode's agreement).
    """
    checked_at = datetime.now(UTC)
    candidates = reconcile(read_orders(spark, order_db), credits, read_accounts(spark, credit_db),
                           ledger=summary.users_df.select("user_id", "points"))
    rec, cleared = recheck(candidates, *readers)
    report = rec.as_dict(checked_at) | (extra or {})  # with the topic mode, its agreement beside the reconciliation
    text = json.dumps(report, indent=2) + "\n"
    for path in report_paths:
        write_atomically(path, text)
    notes.update(orders=rec.orders_committed, credits=rec.credits, missing=len(rec.missing_credits),
                 orphans=len(rec.orphan_credits), mismatches=len(rec.balance_mismatches))
    if any(cleared.values()):
        notes.update(cleared_on_recheck=", ".join(f"{k} {v}" for k, v in cleared.items() if v))
    return rec, report


def agree_with_topic(spark: SparkSession, settings: AggregateSettings, credits: DataFrame, notes: dict[str, Any]) -> TopicAgreement:
    """Every committed message of the order topic (halfmq.spark, read_committed, from its first offset to its end now),
    credited by the service's rule, against the ledger scanned before: the two must agree."""
    from halfmq.spark import register

    register(spark)
    reader = spark.read.format("halfmq").option("topics", settings.order_topic)
    for name, value in (("url", settings.broker_url), ("token", settings.broker_token)):
        if value:
            reader = reader.option(name, value)
    agreement = topic_agreement(topic_credits(reader.load(), settings.points_per_unit), credits)
    notes.update(topic=settings.order_topic, messages=agreement.messages, ledger=agreement.ledger_entries, agrees=agreement.agrees)
    return agreement
