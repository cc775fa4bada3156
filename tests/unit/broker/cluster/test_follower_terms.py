"""A follower refuses a term-end answer from a term lower than the one it knows (a run's: test_follower_stream.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from halfmq.broker.cluster.follower import TERM_HEADER, Follower, LowerTerm
from halfmq.broker.cluster.peers import PeerClient, PeerResponse
from halfmq.broker.cluster.term_history import TermHistory


def _follower(tmp_path: Path, known: int) -> Follower:
    return Follower("n2", lambda: None, TermHistory(tmp_path / "h.json"), PeerClient({}, None), lambda: known, 10.0)  # type: ignore[arg-type, return-value]


def _answer(term: int) -> PeerResponse:
    return PeerResponse.of(200, headers={TERM_HEADER: str(term)}, url="http://n1/v1/replication/term-end")


def test_an_answer_from_a_lower_term_is_refused(tmp_path: Path) -> None:
    with pytest.raises(LowerTerm):
        _follower(tmp_path, known=12)._check_term(_answer(9))


def test_the_same_or_a_higher_term_is_taken(tmp_path: Path) -> None:
    follower = _follower(tmp_path, known=12)
    follower._check_term(_answer(12))
    follower._check_term(_answer(15))
