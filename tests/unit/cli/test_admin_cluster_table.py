"""`halfmq admin cluster show` prints GET /v1/cluster as one row per node under the set's term, leader and last failover."""

from __future__ import annotations

from rich.console import Console

from cli.admin import tables
from halfmq import wire
from tests.support.cluster_answers import LEADER_ANSWER, OLD_LEADER_ANSWER


def _text(data: dict) -> str:
    console = Console(record=True, width=200, color_system=None)
    console.print(tables.cluster(data))
    return console.export_text()


def _rows(text: str) -> dict[str, list[str]]:
    cells = [[c.strip() for c in line.strip("│").split("│")] for line in text.splitlines() if line.startswith("│")]
    return {row[0]: row for row in cells}  # (the header's rules are ┃)


def test_the_recorded_answer_decodes_as_the_cluster_view() -> None:
    assert wire.decode(LEADER_ANSWER, wire.ClusterView).last_failover == wire.LastFailover(term=3, leader="n2", previous="n1",
                                                                                          timestamp=1795668790625)
    assert wire.decode(OLD_LEADER_ANSWER, wire.ClusterView).last_failover is None


def test_cluster_show_prints_one_row_per_node_with_role_lag_and_in_sync() -> None:
    rows = _rows(_text(LEADER_ANSWER))
    assert set(rows) == {"n1", "n2", "n3"}
    assert rows["n2"][1:3] == ["leader", "http://127.0.0.1:36731"]
    assert rows["n3"][1] == "follower" and rows["n3"][-3:] == ["1024", "3072", "no"]
    assert rows["n1"][-2:] == ["0", "yes"]


def test_cluster_show_says_the_term_the_leader_and_the_last_failover_above_the_rows() -> None:
    text = _text(LEADER_ANSWER)
    assert "term 3, leader n2, ack quorum, high watermark 4096" in text
    assert "last failover: n2 in term 3 after n1, " in text


def test_a_sets_first_election_is_called_so_not_a_failover() -> None:
    text = _text({**LEADER_ANSWER, "last_failover": {"term": 1, "leader": "n2", "previous": None, "timestamp": 1_700_000_000_000}})
    assert "first election: n2 in term 1, " in text and "failover" not in text


def test_an_answer_without_last_failover_still_prints_its_rows() -> None:
    text = _text(OLD_LEADER_ANSWER)
    assert "last failover: none seen by this node" in text and len(_rows(text)) == 3


def test_a_single_node_prints_one_row() -> None:
    rows = _rows(_text({"mode": "single node", "nodes": [{"node_id": None, "url": "http://b:1", "role": "single node", "log_end": 7}]}))
    assert list(rows.values()) == [["-", "single node", "http://b:1", "7", "-", "-", "-"]]


def test_on_a_follower_cluster_show_says_whose_figures_the_other_rows_are_and_how_old() -> None:
    follower = {**LEADER_ANSWER, "node_id": "n1", "role": "follower", "writable": False}
    assert "the leader n2's figures, 1.5 s old" in _text({**follower, "picture_from": "n2", "picture_age_seconds": 1.5})
    assert "no figures from a leader yet" in _text(follower)


def test_on_a_follower_whose_replication_stopped_cluster_show_says_why() -> None:
    follower = {**LEADER_ANSWER, "node_id": "n3", "role": "follower", "writable": False,
                "replication_error": "cannot connect to https://127.0.0.1:36731: its certificate is not trusted"}
    assert wire.decode(follower, wire.ClusterView).replication_error is not None
    assert "replication stopped: cannot connect to https://127.0.0.1:36731: its certificate is not trusted" in _text(follower)
    assert "replication stopped" not in _text(LEADER_ANSWER)
