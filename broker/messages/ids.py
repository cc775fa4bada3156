"""Ids the broker hands out (message ids, transaction ids) that no client can predict: 128 random bits each.

They were a random per-process prefix and a counter (RocketMQ's client builds UNIQ_KEY that way): one id handed out
named every later one, and a principal sent messages under the next 399 ids first, then read the journey of another
principal's message (issue 42). Random bytes drawn in bulk (one ``getrandom`` per 4,096 ids, hex-encoded at once) cost
a send about what formatting the counter did, and an id stays 32 hex digits. A lock hands each slice out once, whatever
thread asks.
"""

from __future__ import annotations

import os
import threading

_BATCH = 4096  # ids drawn per getrandom call
_DIGITS = 32  # hex digits per id: 128 bits


class RandomIds:
    def __init__(self, *, upper: bool) -> None:
        self._upper = upper
        self._lock = threading.Lock()
        self._digits = ""  # ids drawn and not handed out yet, end to end
        self._at = 0

    def __call__(self) -> str:
        with self._lock:
            at = self._at
            if at >= len(self._digits):
                drawn = os.urandom(_BATCH * _DIGITS // 2).hex()
                self._digits = drawn.upper() if self._upper else drawn
                at = 0
            self._at = at + _DIGITS
            return self._digits[at:at + _DIGITS]
