"""Which faults the nemesis (tests/support/nemesis.py) applies, in which steps: a seeded plan, decided before any runs.

The plan is a pure function of the kinds, the count and the seed, so it is tested without a broker set; the nemesis
only carries it out, holding each fault for a while against real processes.
"""

from __future__ import annotations

import random

KILL_LEADER = "kill -9 leader"
KILL_FOLLOWER = "kill -9 follower"
STOP_LEADER = "SIGSTOP leader"
KILL_ETCD = "kill -9 etcd"
DISK_FULL = "disk full follower"
PARTITION = "partition"
KINDS = (KILL_LEADER, KILL_FOLLOWER, STOP_LEADER, KILL_ETCD, DISK_FULL, PARTITION)
OVERLAP = 0.3  # the chance that a step has a second fault before the first is healed


def schedule(kinds: tuple[str, ...], faults: int, rng: random.Random) -> list[list[str]]:
    """Steps of one or two kinds, ``faults`` kinds in all; every kind once per round, in a seeded order."""
    drawn: list[str] = []
    while len(drawn) < faults:
        drawn += rng.sample(kinds, len(kinds))
    drawn = drawn[:faults]
    steps: list[list[str]] = []
    while drawn:
        take = 2 if len(drawn) > 1 and rng.random() < OVERLAP else 1
        steps.append(drawn[:take])
        drawn = drawn[take:]
    return steps
