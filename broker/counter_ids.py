"""Unique ids without a syscall each: a random per-process prefix and a counter.

RocketMQ's client builds UNIQ_KEY this way; halfmq uses it for message ids and
transaction ids alike, so a send or a half message never pays for a uuid4 (urandom).
Both are 32 hex digits: 16 of prefix, 16 of counter.
"""

from __future__ import annotations

import itertools
import os


class CounterIds:
    def __init__(self, *, upper: bool) -> None:
        prefix = os.urandom(8).hex()
        self._template = prefix.upper() + "%016X" if upper else prefix + "%016x"
        self._counter = itertools.count()

    def __call__(self) -> str:
        return self._template % next(self._counter)
