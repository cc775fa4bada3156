"""Delivery events counted per (consumer group, topic) for /metrics, with a bound on how many pairs have rows of their own.

An event is counted where its pair stands when it happens: on the pair's own row, or, once ``capacity`` pairs have
rows, on the one ``OTHER`` row. /metrics moves the rows to the pairs it shows (``keep``); a pair that loses its row
loses its count, and one that gets a row starts from 0. So every row only ever grows while it exists, ``OTHER``
included, and at any moment each event is in exactly one row: Prometheus' ``rate()`` of any row, and the sum of the
rates of all of them, stay right as the rows move (a row that comes back starts at 0, which Prometheus reads as
a reset). The cost of an event is a dict lookup, and a scrape reads at most ``capacity + 1`` rows.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

OTHER = "(other)"  # the label value of the summed row: not a valid topic or group name (broker/messages/names.py)
Pair = tuple[str, str]  # (consumer group, topic)
Event = tuple[str, str]  # (event, result): ("out", ""), ("ack", "ok"), ("ack", "expired"), ...


class EventCounts:
    def __init__(self, capacity: int | None = None) -> None:
        self.capacity = capacity  # None: every pair has its own row (a bare service; the runtime sets the bound)
        self._rows: dict[Pair, Counter[Event]] = {}
        self._other: Counter[Event] = Counter()

    def add(self, event: str, group: str, topic: str, result: str = "", n: int = 1) -> None:
        row = self._rows.get((group, topic))
        if row is None:
            if self.capacity is not None and len(self._rows) >= self.capacity:
                self._other[event, result] += n
                return
            row = self._rows[group, topic] = Counter()
        row[event, result] += n

    def keep(self, pairs: Iterable[Pair]) -> None:
        """Rows for ``pairs`` from now on (up to ``capacity`` of them): rows of other pairs go, their counts with them."""
        wanted = list(dict.fromkeys(pairs))[:self.capacity]
        self._rows = {pair: self._rows.get(pair) or Counter() for pair in wanted}

    def rows(self) -> dict[tuple[str, str, str, str], int]:
        """Every row, as (event, group, topic, result) -> count; the summed row under (event, OTHER, OTHER, result)."""
        out = {(event, group, topic, result): n for (group, topic), row in self._rows.items() for (event, result), n in row.items()}
        out.update({(event, OTHER, OTHER, result): n for (event, result), n in self._other.items()})
        return out

    def pairs(self) -> list[Pair]:
        """The pairs with a row of their own now."""
        return list(self._rows)
