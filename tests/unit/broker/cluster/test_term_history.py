"""The term history finds where two logs diverge (Kafka's leader-epoch lookup)."""

from __future__ import annotations

from pathlib import Path

from halfmq.broker.cluster.term_history import TermHistory


def test_a_term_ends_where_the_next_one_begins_or_at_the_log_end(tmp_path: Path) -> None:
    history = TermHistory(tmp_path / "h.json")
    history.begin(5, 0)
    history.begin(9, 1000)
    history.begin(12, 1800)
    assert history.end_of(5, 2500) == 1000
    assert history.end_of(7, 2500) == 1000  # a term this log never saw (an old leader's): where the next known one starts
    assert history.end_of(12, 2500) == 2500
    assert history.end_of(0, 2500) == 0


def test_it_survives_a_restart_and_ignores_an_older_term(tmp_path: Path) -> None:
    history = TermHistory(tmp_path / "h.json")
    history.begin(5, 0)
    history.begin(4, 300)
    assert TermHistory(tmp_path / "h.json").entries == [(5, 0)]


def test_a_follower_adopts_the_leaders_entries_within_its_log_and_truncates_with_it(tmp_path: Path) -> None:
    history = TermHistory(tmp_path / "h.json")
    history.adopt([(5, 0), (9, 1000), (12, 1800)], log_end=1200)
    assert history.entries == [(5, 0), (9, 1000)]
    history.truncate(900)
    assert history.entries == [(5, 0)] and history.last_term == 5
