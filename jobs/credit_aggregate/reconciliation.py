"""Committed orders ↔ credits ↔ balances, decided by a pure function over DataFrames.

No I/O here (an import-linter contract): re-checking the candidates against the live databases is
the databases module's :func:`recheck`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


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


@dataclass(frozen=True)
class TopicAgreement:
    """ORDER_TOPIC's committed messages, credited by the service's rule, against the ledger: both must say the same."""

    messages: int  # the creditable messages read from the topic
    ledger_entries: int
    only_on_topic: list[str]  # order ids with messages the ledger has no entry for (not credited yet, or lost)
    only_in_ledger: list[str]  # order ids credited without a committed message
    differing: list[str]  # order ids on both whose points or entry count differ
    users_differing: list[dict[str, Any]]  # {user_id, topic_points, ledger_points}

    @property
    def agrees(self) -> bool:
        return not (self.only_on_topic or self.only_in_ledger or self.differing or self.users_differing)

    def as_dict(self) -> dict[str, Any]:
        return {"messages": self.messages, "ledger_entries": self.ledger_entries, "agrees": self.agrees,
                "only_on_topic": list(self.only_on_topic), "only_in_ledger": list(self.only_in_ledger),
                "differing": list(self.differing), "users_differing": [dict(u) for u in self.users_differing]}


def topic_agreement(topic: DataFrame, ledger: DataFrame) -> TopicAgreement:
    """``topic(order_id, user_id, points)`` (``transforms.topic_credits``) against ``ledger(order_id, user_id, points)``.

    Per order: the sum of points and the number of entries (an order and its refund are two); per user: the points.
    """
    from pyspark.sql import functions as F

    def per_order(df: DataFrame, side: str) -> DataFrame:
        return df.groupBy("order_id").agg(F.sum("points").cast("long").alias(f"{side}_points"), F.count(F.lit(1)).alias(f"{side}_n"))

    orders = per_order(topic, "t").join(per_order(ledger, "l"), "order_id", "full_outer")
    stats = orders.agg(
        F.sum("t_n").alias("messages"), F.sum("l_n").alias("entries"),
        F.collect_list(F.when(F.col("l_n").isNull(), F.col("order_id"))).alias("only_topic"),
        F.collect_list(F.when(F.col("t_n").isNull(), F.col("order_id"))).alias("only_ledger"),
        F.collect_list(F.when(F.col("t_n").isNotNull() & F.col("l_n").isNotNull()
                              & ((F.col("t_points") != F.col("l_points")) | (F.col("t_n") != F.col("l_n"))), F.col("order_id")))
        .alias("differing"),
    ).collect()[0]

    def per_user(df: DataFrame, name: str) -> DataFrame:
        return df.groupBy("user_id").agg(F.sum("points").cast("long").alias(name))

    users = (per_user(topic, "topic_points").join(per_user(ledger, "ledger_points"), "user_id", "full_outer")
             .select("user_id", F.coalesce("topic_points", F.lit(0)).alias("topic_points"),
                     F.coalesce("ledger_points", F.lit(0)).alias("ledger_points"))
             .where(F.col("topic_points") != F.col("ledger_points")).orderBy("user_id").collect())
    return TopicAgreement(
        messages=int(stats["messages"] or 0), ledger_entries=int(stats["entries"] or 0),
        only_on_topic=sorted(stats["only_topic"]), only_in_ledger=sorted(stats["only_ledger"]), differing=sorted(stats["differing"]),
        users_differing=[{"user_id": r["user_id"], "topic_points": int(r["topic_points"]), "ledger_points": int(r["ledger_points"])}
                         for r in users],
    )
