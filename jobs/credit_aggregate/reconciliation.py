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
