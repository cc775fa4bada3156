"""Delivery events per (group, topic) row: at most ``capacity`` rows of their own, the rest on one (other) row, and
every row only grows while it exists, as the rows move to the pairs /metrics shows."""

from __future__ import annotations

from halfmq.broker.delivery.event_counts import OTHER, EventCounts


def test_pairs_get_rows_first_come_until_the_capacity_then_count_on_the_other_row() -> None:
    counts = EventCounts(capacity=2)
    counts.add("out", "g1", "T", n=3)
    counts.add("out", "g2", "T")
    counts.add("out", "g3", "T", n=5)
    counts.add("ack", "g1", "T", "ok")
    assert counts.rows() == {("out", "g1", "T", ""): 3, ("out", "g2", "T", ""): 1, ("ack", "g1", "T", "ok"): 1,
                             ("out", OTHER, OTHER, ""): 5}
    assert counts.pairs() == [("g1", "T"), ("g2", "T")]


def test_without_a_capacity_every_pair_has_its_own_row() -> None:
    counts = EventCounts()
    for g in range(500):
        counts.add("out", f"g{g}", "T")
    assert len(counts.pairs()) == 500 and not any(g == OTHER for (_, g, _, _) in counts.rows())


def test_a_pair_kept_keeps_its_count_and_a_pair_that_gets_a_row_starts_at_zero() -> None:
    counts = EventCounts(capacity=2)
    counts.add("out", "g1", "T", n=3)
    counts.add("out", "g2", "T", n=4)
    counts.add("out", "g3", "T", n=5)  # on the other row
    counts.keep([("g1", "T"), ("g3", "T")])
    counts.add("out", "g3", "T")
    counts.add("out", "g2", "T", n=7)  # g2 lost its row: from now on on the other row
    assert counts.rows() == {("out", "g1", "T", ""): 3, ("out", "g3", "T", ""): 1, ("out", OTHER, OTHER, ""): 12}


def test_every_row_only_grows_while_the_rows_move() -> None:
    counts = EventCounts(capacity=3)
    seen: dict[tuple[str, str, str, str], int] = {}
    for step in range(60):
        counts.add("out", f"g{step % 7}", "T", n=step % 4)
        if step % 10 == 9:
            counts.keep([(f"g{(step + k) % 7}", "T") for k in range(3)])
            seen = {k: v for k, v in seen.items() if k in counts.rows()}  # a row that goes ends its series
        for key, n in counts.rows().items():
            assert n >= seen.get(key, 0), key
            seen[key] = n
    assert counts.rows()[("out", OTHER, OTHER, "")] > 0


def test_keep_takes_at_most_the_capacity_and_no_pair_twice() -> None:
    counts = EventCounts(capacity=2)
    counts.keep([("a", "T"), ("a", "T"), ("b", "T"), ("c", "T")])
    assert counts.pairs() == [("a", "T"), ("b", "T")]
