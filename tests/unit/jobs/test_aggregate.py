"""The pure aggregation on hand-made ledgers: exact totals per user and per UTC day."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest
from pyspark.sql import functions as F

from halfmq.jobs.credit_aggregate import aggregate, normalize_credits

SCHEMA = "id long, order_id string, user_id string, points long, created_at string"


def ledger(spark, rows):
    """Credits as they come out of SQLite: timestamps as text."""
    return normalize_credits(spark.createDataFrame(rows, SCHEMA))


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


def users_of(df) -> dict[str, tuple]:
    rows = df.select("user_id", "points", "orders", F.unix_micros("first_credit_at").alias("first"),
                     F.unix_micros("last_credit_at").alias("last")).collect()
    return {r["user_id"]: (r["points"], r["orders"], micros(r["first"]), micros(r["last"])) for r in rows}


def micros(us: int) -> datetime:
    return datetime.fromtimestamp(us // 1_000_000, UTC).replace(microsecond=us % 1_000_000)


LEDGER = [
    # alice: three orders over two days, one a microsecond before midnight
    (1, "o1", "alice", 10, "2026-03-01 10:00:00.000000"),
    (2, "o2", "alice", 5, "2026-03-01 23:59:59.999999"),
    (3, "o3", "alice", 7, "2026-03-02 00:00:00.000000"),
    # bob: an order written with an explicit +02:00 offset (06:30 UTC)
    (4, "o4", "bob", 20, "2026-03-02 12:00:00.500000+00:00"),
    (5, "o5", "bob", 1, "2026-03-03T08:30:00+02:00"),
    # carol: a user with one order
    (6, "o6", "carol", 100, "2026-03-01 00:00:00"),
    # dave: 01:00 at +05:00 is still the previous day in UTC
    (7, "o7", "dave", 3, "2026-03-03 01:00:00+05:00"),
    # erin: zero points still counts as an order
    (8, "o8", "erin", 0, "2026-03-03 23:00:00Z"),
]


def test_per_user_totals_sum_points_count_orders_and_span_first_to_last_credit(spark) -> None:
    users, _ = aggregate(ledger(spark, LEDGER))
    assert users.columns == ["user_id", "points", "orders", "first_credit_at", "last_credit_at"]
    assert users_of(users) == {
        "alice": (22, 3, utc(2026, 3, 1, 10), utc(2026, 3, 2)),
        "bob": (21, 2, utc(2026, 3, 2, 12, 0, 0, 500000), utc(2026, 3, 3, 6, 30)),
        "carol": (100, 1, utc(2026, 3, 1), utc(2026, 3, 1)),
        "dave": (3, 1, utc(2026, 3, 2, 20), utc(2026, 3, 2, 20)),
        "erin": (0, 1, utc(2026, 3, 3, 23), utc(2026, 3, 3, 23)),
    }
    assert [r["user_id"] for r in users.collect()] == ["alice", "bob", "carol", "dave", "erin"]


def test_per_day_totals_group_by_the_utc_calendar_day(spark) -> None:
    _, days = aggregate(ledger(spark, LEDGER))
    assert days.columns == ["day", "points", "orders"]
    assert [tuple(r) for r in days.collect()] == [
        (date(2026, 3, 1), 10 + 5 + 100, 3),
        (date(2026, 3, 2), 7 + 20 + 3, 3),
        (date(2026, 3, 3), 1 + 0, 2),
    ]


def test_days_do_not_depend_on_the_session_time_zone(spark) -> None:
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        credits = ledger(spark, LEDGER)
        _, days = aggregate(credits)
        assert [(r["day"], r["points"]) for r in days.collect()] == [
            (date(2026, 3, 1), 115), (date(2026, 3, 2), 30), (date(2026, 3, 3), 1)]
        first = credits.where("order_id = 'o6'").select(F.unix_micros("created_at")).first()[0]
        assert micros(first) == utc(2026, 3, 1)  # text without an offset is UTC, not New York time
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")


def test_totals_over_many_rows_match_a_python_fold(spark) -> None:
    rows = [(i, f"o{i}", f"u{i % 7}", i % 13, f"2026-04-{1 + i % 5:02d} {i % 24:02d}:{i % 60:02d}:00") for i in range(1, 2001)]
    users, days = aggregate(ledger(spark, rows))
    expected_users: dict[str, list[int]] = {}
    expected_days: dict[date, list[int]] = {}
    for _, _, user, points, ts in rows:
        expected_users.setdefault(user, [0, 0])
        expected_users[user][0] += points
        expected_users[user][1] += 1
        day = date.fromisoformat(ts[:10])
        expected_days.setdefault(day, [0, 0])
        expected_days[day][0] += points
        expected_days[day][1] += 1
    assert {r["user_id"]: [r["points"], r["orders"]] for r in users.collect()} == expected_users
    assert {r["day"]: [r["points"], r["orders"]] for r in days.collect()} == expected_days


def test_an_empty_ledger_has_no_users_and_no_days(spark) -> None:
    users, days = aggregate(ledger(spark, []))
    assert users.count() == 0 and days.count() == 0


def test_the_ledger_is_normalized_to_long_points_and_utc_timestamps(spark) -> None:
    credits = ledger(spark, LEDGER[:1])
    assert [(f.name, f.dataType.simpleString()) for f in credits.schema.fields] == [
        ("id", "bigint"), ("order_id", "string"), ("user_id", "string"), ("points", "bigint"), ("created_at", "timestamp")]


@pytest.mark.parametrize("text, expected", [
    ("2026-11-22 06:52:00.123456", utc(2026, 11, 22, 6, 52, 0, 123456)),
    ("2026-11-22 06:52:00.123456+00:00", utc(2026, 11, 22, 6, 52, 0, 123456)),
    ("2026-11-22T06:52:00Z", utc(2026, 11, 22, 6, 52)),
    ("2026-11-22 08:52:00-0200", utc(2026, 11, 22, 10, 52)),
    ("2026-11-22 06:52:00+00", utc(2026, 11, 22, 6, 52)),
])
def test_timestamp_text_with_or_without_an_offset_parses_to_the_right_instant(spark, text: str, expected: datetime) -> None:
    credits = ledger(spark, [(1, "o1", "u", 1, text)])
    assert micros(credits.select(F.unix_micros("created_at")).first()[0]) == expected
