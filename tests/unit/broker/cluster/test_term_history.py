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


def test_a_follower_whose_last_term_the_leader_never_had_cuts_where_their_last_shared_term_ends(tmp_path: Path) -> None:
    """The queue checker's seed 7: n1 wrote at X in term 172; n2, elected for 176 without it, wrote a record of the same
    length at X; n1 led again in 179 from X + its record. n2 asks where 176 ends: n1 never had 176."""
    leader, follower = TermHistory(tmp_path / "leader.json"), TermHistory(tmp_path / "follower.json")
    x, after = 63_356_035, 63_356_597
    for term, start in ((150, 0), (172, 1_000), (179, after)):
        leader.begin(term, start)
    for term, start in ((150, 0), (172, 1_000), (176, x)):
        follower.begin(term, start)
    answered, end = leader.known_at_most(176), leader.end_of(176, 70_000_000)
    assert (answered, end) == (172, after)
    assert follower.divergence(176, answered, end, log_end=after) == x  # its term-176 record goes, though its log ends at `after`


def test_a_follower_whose_last_term_the_leader_had_cuts_where_the_leader_says(tmp_path: Path) -> None:
    follower = TermHistory(tmp_path / "follower.json")
    follower.begin(5, 0)
    follower.begin(9, 1000)
    assert follower.divergence(9, 9, 1500, log_end=2000) == 1500
    assert follower.divergence(9, 9, 2500, log_end=2000) == 2000  # nothing to cut
    assert follower.divergence(9, 9, 1500, log_end=1200) == 1200


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
