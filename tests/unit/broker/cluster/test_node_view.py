"""A node's view of its set: a follower shows the leader's picture of the set (whose, how old), a leader its own tracker's."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from halfmq.broker.cluster.decisions import Role
from halfmq.broker.cluster.etcd import ClusterAddress
from halfmq.broker.cluster.node_view import PICTURE_EVERY, SetPicture, followed_picture, node_view, picture_due

MEMBERS = {"n1": "http://n1", "n2": "http://n2", "n3": "http://n3"}
LEADERS_PICTURE = {"leader": "n1", "in_sync": ["n1", "n2", "n3"],
                   "nodes": [{"node_id": "n1", "role": "leader", "durable_offset": 90, "log_end": 100, "lag": 0, "in_sync": True},
                             {"node_id": "n2", "durable_offset": 80, "log_end": 90, "lag": 10, "in_sync": True},
                             {"node_id": "n3", "durable_offset": 70, "log_end": 80, "lag": 20, "in_sync": True}],
                   "last_failover": {"term": 2, "leader": "n1", "previous": None, "timestamp": 1}}


class _Registrations:
    async def get_prefix(self, prefix: str) -> list[Any]:
        return [SimpleNamespace(json=lambda n=n, u=u: {"node_id": n, "url": u}) for n, u in MEMBERS.items()]


def _follower(picture: SetPicture | None, leader: str = "n1", error: str | None = None) -> Any:
    store = SimpleNamespace(flushed_offset=85, commit_log=SimpleNamespace(end_offset=95), visible=SimpleNamespace(bound=80))
    return SimpleNamespace(
        node_id="n2", url="http://n2", role=Role.FOLLOWER, term=2, writable=False, members=MEMBERS, etcd=_Registrations(),
        address=ClusterAddress.parse("etcd://127.0.0.1:2379/set"), store=store, etcd_error=None, last_failover=None,
        standing=SimpleNamespace(leader={"node_id": leader, "url": MEMBERS[leader]}),
        settings=SimpleNamespace(ack="quorum", cluster_size=3),
        following=SimpleNamespace(replication=SimpleNamespace(picture=picture, leader_end=100, error=error)))


def test_a_picture_is_due_in_the_first_answer_to_a_follower_then_once_every_period() -> None:
    assert picture_due(None, 5.0)
    assert not picture_due(5.0, 5.0 + PICTURE_EVERY / 2)
    assert picture_due(5.0, 5.0 + PICTURE_EVERY)


async def test_a_follower_shows_the_leaders_rows_of_the_other_nodes_its_own_offsets_and_whose_and_how_old_they_are() -> None:
    view = await node_view(_follower(SetPicture.of(LEADERS_PICTURE, received=10.0)), clock=lambda: 12.5)
    rows = {n["node_id"]: n for n in view["nodes"]}
    assert rows["n1"] == {"node_id": "n1", "url": "http://n1", "role": "leader", "durable_offset": 90, "log_end": 100, "lag": 0,
                          "in_sync": True}
    assert rows["n3"]["in_sync"] is True and rows["n3"]["log_end"] == 80
    assert rows["n2"] == {"node_id": "n2", "url": "http://n2", "role": "follower", "durable_offset": 85, "log_end": 95, "lag": 15,
                          "in_sync": True}
    assert view["in_sync"] == ["n1", "n2", "n3"] and view["picture_from"] == "n1" and view["picture_age_seconds"] == 2.5
    assert view["last_failover"] == LEADERS_PICTURE["last_failover"]  # the leader's record of the set's first election
    assert view["replication_error"] is None


async def test_a_follower_whose_replication_stopped_says_why() -> None:
    view = await node_view(_follower(None, error="cannot connect to https://n1: its certificate is not trusted"), clock=lambda: 1.0)
    assert view["replication_error"] == "cannot connect to https://n1: its certificate is not trusted"


async def test_a_follower_without_a_picture_of_its_present_leader_shows_only_its_own_offsets() -> None:
    for node in (_follower(None), _follower(SetPicture.of(LEADERS_PICTURE, received=10.0), leader="n3")):
        view = await node_view(node, clock=lambda: 12.5)
        rows = {n["node_id"]: n for n in view["nodes"]}
        assert rows["n1"].get("log_end") is None and rows["n2"]["log_end"] == 95 and rows["n2"].get("in_sync") is None
        assert view["in_sync"] is None and view["picture_from"] is None and view["picture_age_seconds"] is None


def test_the_picture_a_follower_follows_is_its_present_leaders_only() -> None:
    picture = SetPicture.of(LEADERS_PICTURE, received=10.0)
    assert followed_picture(_follower(picture)) is picture
    assert followed_picture(_follower(picture, leader="n3")) is None  # an earlier leader's in-sync set is not this one's
    assert followed_picture(_follower(None)) is None
