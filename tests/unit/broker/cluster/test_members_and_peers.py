"""The configured members, and the one client a node calls peers with: the cluster token goes to members only."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from halfmq.broker.cluster.members import is_member_url, parse_members
from halfmq.broker.cluster.peers import NotAMember, PeerError, PeerRequest, PeerResponse
from halfmq.broker.config import BrokerSettings
from tests.support.fake_peers import fake_peers

MEMBERS = {"n1": "http://10.0.0.1:10911", "n2": "http://10.0.0.2:10911", "n3": "https://b3.example:8443"}


def test_members_parse_from_node_id_equals_url_entries() -> None:
    assert parse_members(["n1=http://10.0.0.1:10911/", " n2 = http://10.0.0.2:10911"]) == {
        "n1": "http://10.0.0.1:10911", "n2": "http://10.0.0.2:10911"}


@pytest.mark.parametrize("entry", ["n1", "=http://a:1", "n1=a:1", "n1=ftp://a:1", "n1=http://a:1/path", "n1=http://"])
def test_a_malformed_member_is_refused(entry: str) -> None:
    with pytest.raises(ValueError):
        parse_members([entry])


def test_a_repeated_node_id_or_url_is_refused() -> None:
    with pytest.raises(ValueError):
        parse_members(["n1=http://a:1", "n1=http://b:1"])
    with pytest.raises(ValueError):
        parse_members(["n1=http://a:1", "n2=http://a:1"])


def test_only_a_members_origin_is_a_member_url() -> None:
    assert is_member_url("http://10.0.0.2:10911/v1/replication/fetch", MEMBERS)
    assert is_member_url("https://B3.example:8443/v1/replication/state", MEMBERS)
    assert not is_member_url("http://127.0.0.1:23999/v1/replication/fetch", MEMBERS)
    assert not is_member_url("http://10.0.0.2:10912/v1/replication/fetch", MEMBERS)  # another port
    assert not is_member_url("https://10.0.0.2:10911/", MEMBERS)  # another scheme
    assert not is_member_url("http://10.0.0.2.evil.example:10911/", MEMBERS)
    assert not is_member_url("http://10.0.0.2:99999999/", MEMBERS)


async def test_the_peer_client_sends_the_token_to_members_and_nothing_to_anyone_else() -> None:
    seen: list[tuple[str, str | None]] = []

    def answer(request: PeerRequest) -> PeerResponse:
        seen.append((str(request.url), request.headers.get("authorization")))
        return PeerResponse.of(302, headers={"location": "http://127.0.0.1:23999/steal"})

    async with fake_peers(answer, *MEMBERS.values(), token="s3cret") as client:
        redirected = await client.get("http://10.0.0.2:10911/v1/replication/state")
        assert redirected.status_code == 302  # not followed
        with pytest.raises(NotAMember):
            await client.post("http://127.0.0.1:23999/v1/replication/fetch", json={})
        with pytest.raises(PeerError):  # what the follower's loops already handle
            await client.get("http://127.0.0.1:23999/v1/replication/term-end")
    assert seen == [("http://10.0.0.2:10911/v1/replication/state", "Bearer s3cret")]


def _set(**overrides: object) -> BrokerSettings:
    base: dict = {"cluster": "etcd://127.0.0.1:2379/halfmq", "node_id": "n2",
                  "cluster_members": "n1=http://10.0.0.1:10911,n2=http://10.0.0.2:10911,n3=http://10.0.0.3:10911"}
    return BrokerSettings(**{**base, **overrides})


def test_a_node_of_a_set_takes_its_url_and_the_sets_size_from_the_members() -> None:
    settings = _set()
    assert (settings.advertise_url, settings.cluster_size) == ("http://10.0.0.2:10911", 3)


def test_a_set_without_members_or_with_a_node_or_url_outside_them_does_not_start() -> None:
    for wrong in ({"cluster_members": ""}, {"node_id": "n4"}, {"advertise_url": "http://10.0.0.9:10911"}, {"cluster_size": 5},
                  {"etcd_user": "halfmq"}):
        with pytest.raises(ValidationError):
            _set(**wrong)


def test_a_single_broker_needs_no_members() -> None:
    assert BrokerSettings().members() == {}
