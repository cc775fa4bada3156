"""The aggregation as pure functions over DataFrames: the ledger in, per-user and per-day totals out.

No I/O here (an import-linter contract): tests build the DataFrames by hand.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pyspark is imported lazily: `halfmq --help` must not need it
    from pyspark.sql import Column, DataFrame


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


ORDER_BODY = "order_id STRING, user_id STRING, amount STRING, created_at STRING, kind STRING"  # services/order_events.py's contract


def topic_credits(messages: DataFrame, points_per_unit: int) -> DataFrame:
    """ORDER_TOPIC's messages (``format("halfmq")``'s rows) → what the ledger should hold for each:
    ``order_id, user_id, points long, kind`` — an order's whole units × the rate, a refund's the same taken back.

    The credit service's rule (services/credit/rules.py), restated over columns; a body it could never credit (not
    JSON, no order or user, no amount) becomes no row, as it becomes no credit (it ends in the DLQ).
    """
    from pyspark.sql import functions as F

    body = F.from_json(F.col("body"), ORDER_BODY)
    parsed = messages.select(body.alias("m")).select("m.*")
    amount = F.col("amount").cast("decimal(14,2)")
    kind = F.coalesce(F.col("kind"), F.lit("order"))
    whole = (F.floor(amount) * F.lit(points_per_unit)).cast("long")
    return (parsed.where(F.col("order_id").isNotNull() & F.col("user_id").isNotNull() & amount.isNotNull()
                         & kind.isin("order", "refund"))
            .select("order_id", "user_id", F.when(kind == "refund", -whole).otherwise(whole).alias("points"), kind.alias("kind")))
