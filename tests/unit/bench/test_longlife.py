"""The long-life soak's verdict: flat disk is a second half no larger than the first."""

from __future__ import annotations

from halfmq.bench.scenarios.longlife import disk_growth


def test_a_disk_that_retention_keeps_level_grows_by_one() -> None:
    assert disk_growth([0, 100, 120, 110, 115, 118, 112]) == 0.98


def test_a_disk_that_keeps_growing_shows_how_much() -> None:
    assert disk_growth([0, 100, 200, 300, 400, 500, 600]) == 2.0


def test_too_few_samples_say_nothing() -> None:
    assert disk_growth([0, 100, 120]) is None
