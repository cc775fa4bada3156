"""In-flight transactions by age bucket: a pure decision on born timestamps and a given now."""

from __future__ import annotations

from halfmq.broker.api.operator_metrics import age_bucket, count_by_age


def test_an_age_falls_in_the_first_bucket_that_holds_it() -> None:
    assert [age_bucket(s) for s in (0, 10, 10.001, 60, 61, 600, 3600, 3601)] == [
        "le_10s", "le_10s", "le_1m", "le_1m", "le_10m", "le_10m", "le_1h", "gt_1h"]


def test_counts_name_every_bucket_even_empty_ones() -> None:
    now_ms = 10_000_000
    counts = count_by_age([now_ms - 5_000, now_ms - 30_000, now_ms - 7_200_000], now_ms)
    assert counts == {"le_10s": 1, "le_1m": 1, "le_10m": 0, "le_1h": 0, "gt_1h": 1}
