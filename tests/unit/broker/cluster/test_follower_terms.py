"""A follower refuses an answer from a term lower than the one it knows, and keeps its leader's term history."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from halfmq.broker.cluster.follower import HISTORY_HEADER, TERM_HEADER, DurableReports, Follower, LowerTerm
from halfmq.broker.cluster.peers import PeerClient, PeerResponse
from halfmq.broker.cluster.term_history import TermHistory


def _follower(tmp_path: Path, known: int) -> Follower:
    return Follower("n2", lambda: None, TermHistory(tmp_path / "h.json"), PeerClient({}, None), lambda: known, 10.0)  # type: ignore[arg-type, return-value]


def _answer(term: int) -> PeerResponse:
    return PeerResponse.of(200, headers={TERM_HEADER: str(term)}, url="http://n1/v1/replication/fetch")


def test_an_answer_from_a_lower_term_is_refused(tmp_path: Path) -> None:
    with pytest.raises(LowerTerm):
        _follower(tmp_path, known=12)._check_term(_answer(9))


def test_the_same_or_a_higher_term_is_taken(tmp_path: Path) -> None:
    follower = _follower(tmp_path, known=12)
    follower._check_term(_answer(12))
    follower._check_term(_answer(15))


def test_the_leaders_term_history_is_kept_from_the_answer_that_carried_it_and_taken_as_the_log_reaches_its_entries(
        tmp_path: Path) -> None:
    history = TermHistory(tmp_path / "h.json")
    follower = Follower("n2", lambda: None, history, PeerClient({}, None), lambda: 7, 10.0)  # type: ignore[arg-type, return-value]
    store = SimpleNamespace(append_replicated=lambda data, start: start + len(data), wait_flushed=lambda end: None)
    request = "http://n1/v1/replication/fetch"
    first = PeerResponse.of(200, content=b"x" * 100, headers={TERM_HEADER: "7", HISTORY_HEADER: json.dumps([[3, 0], [7, 150]])},
                           url=request)
    follower._keep(store, first, 0, DurableReports(0))  # type: ignore[arg-type]
    assert history.entries == [(3, 0)]  # term 7 starts past what this log has
    later = PeerResponse.of(200, content=b"x" * 100, headers={TERM_HEADER: "7"}, url=request)  # no history: unchanged
    follower._keep(store, later, 100, DurableReports(100))  # type: ignore[arg-type]
    assert history.entries == [(3, 0), (7, 150)]
