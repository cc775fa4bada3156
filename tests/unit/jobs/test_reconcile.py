"""The pure reconciliation: committed orders ↔ credits ↔ balances, on hand-made data."""

from __future__ import annotations

from datetime import UTC, datetime

from pyspark.sql import functions as F

from halfmq.jobs.credit_aggregate import Reconciliation, reconcile

CREDITS = "order_id string, user_id string, points long"


def frames(spark, orders, credits, accounts):
    return (spark.createDataFrame([(o,) for o in orders], "order_id string"),
            spark.createDataFrame(credits, CREDITS),
            spark.createDataFrame(accounts, "user_id string, balance long"))


def test_a_consistent_ledger_reconciles_clean(spark) -> None:
    result = reconcile(*frames(spark, ["o1", "o2", "o3"],
                               [("o1", "alice", 10), ("o2", "alice", 5), ("o3", "bob", 7)],
                               [("alice", 15), ("bob", 7)]))
    assert result == Reconciliation(orders_committed=3, credits=3, missing_credits=[], orphan_credits=[], balance_mismatches=[])
    assert result.clean


def test_missing_credits_orphan_credits_and_wrong_balances_are_each_reported(spark) -> None:
    result = reconcile(*frames(
        spark,
        ["o1", "o2", "o3", "o4", "o5", "o6"],
        [("o1", "alice", 10), ("o2", "alice", 5), ("o3", "bob", 7), ("o4", "bob", 1), ("o9", "carol", 4)],
        [("alice", 15),   # right
         ("bob", 9),      # ledger says 8
         ("dave", 3),     # an account without any credit
         ("erin", 0)],    # an empty account without credits is fine
    ))
    assert result.orders_committed == 6
    assert result.credits == 5
    assert result.missing_credits == ["o5", "o6"]
    assert result.orphan_credits == ["o9"]
    assert result.balance_mismatches == [
        {"user_id": "bob", "balance": 9, "ledger_points": 8},
        {"user_id": "carol", "balance": 0, "ledger_points": 4},  # credited, but no account row at all
        {"user_id": "dave", "balance": 3, "ledger_points": 0},
    ]
    assert not result.clean


def test_a_given_ledger_gives_the_same_answer_as_summing_the_credits(spark) -> None:
    orders, credits, accounts = frames(spark, ["o1", "o2"], [("o1", "alice", 10), ("o2", "bob", 5)], [("alice", 10), ("bob", 6)])
    ledger = credits.groupBy("user_id").agg(F.sum("points").alias("points"))
    assert reconcile(orders, credits, accounts, ledger=ledger) == reconcile(orders, credits, accounts)


def test_nothing_at_all_reconciles_clean(spark) -> None:
    result = reconcile(*frames(spark, [], [], []))
    assert (result.orders_committed, result.credits, result.clean) == (0, 0, True)


def test_the_report_has_exactly_the_design_shape(spark) -> None:
    result = reconcile(*frames(spark, ["o1", "o2"], [("o1", "alice", 10), ("o3", "bob", 1)], [("alice", 11)]))
    checked = datetime(2026, 11, 22, 6, 52, tzinfo=UTC)
    report = result.as_dict(checked)
    assert list(report) == ["checked_at", "orders_committed", "credits", "missing_credits", "orphan_credits", "balance_mismatches"]
    assert report == {
        "checked_at": "2026-11-22T06:52:00+00:00",
        "orders_committed": 2,
        "credits": 2,
        "missing_credits": ["o2"],
        "orphan_credits": ["o3"],
        "balance_mismatches": [{"user_id": "alice", "balance": 11, "ledger_points": 10},
                               {"user_id": "bob", "balance": 0, "ledger_points": 1}],
    }
