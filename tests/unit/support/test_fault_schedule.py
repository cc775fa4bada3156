"""The nemesis's plan (tests/support/fault_schedule.py): bounded, every kind in each round, the same for the same seed."""

from __future__ import annotations

import collections
import random

from tests.support.fault_schedule import KINDS, schedule


def test_a_schedule_has_exactly_the_faults_asked_for_in_steps_of_one_or_two() -> None:
    steps = schedule(KINDS, 100, random.Random(32))
    assert sum(len(step) for step in steps) == 100
    assert {len(step) for step in steps} == {1, 2}


def test_every_kind_comes_once_in_each_round() -> None:
    drawn = [kind for step in schedule(KINDS, 4 * len(KINDS), random.Random(7)) for kind in step]
    for start in range(0, len(drawn), len(KINDS)):
        assert sorted(drawn[start : start + len(KINDS)]) == sorted(KINDS)


def test_the_short_run_meets_every_kind() -> None:
    drawn = collections.Counter(kind for step in schedule(KINDS, 8, random.Random(32)) for kind in step)
    assert set(drawn) == set(KINDS)


def test_the_same_seed_gives_the_same_schedule() -> None:
    assert schedule(KINDS, 30, random.Random(5)) == schedule(KINDS, 30, random.Random(5))


def test_a_run_without_partitions_never_schedules_one() -> None:
    kinds = tuple(kind for kind in KINDS if kind != "partition")
    assert all("partition" not in step for step in schedule(kinds, 20, random.Random(1)))
