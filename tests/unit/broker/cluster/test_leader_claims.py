"""Whom a node follows: only a configured member, by id and URL, under a lease (issue 30, item 2)."""

from __future__ import annotations

from halfmq.broker.cluster.decisions import Claim, judge_leader_claim, may_clear_foreign_claim

MEMBERS = {"n1": "http://10.0.0.1:10911", "n2": "http://10.0.0.2:10911", "n3": "http://10.0.0.3:10911"}
LEASE = 7587891


def test_a_member_named_by_its_id_and_url_under_a_lease_is_followed() -> None:
    assert judge_leader_claim({"node_id": "n2", "url": "http://10.0.0.2:10911"}, LEASE, "n1", MEMBERS) is Claim.MEMBER
    assert judge_leader_claim({"node_id": "n2", "url": "http://10.0.0.2:10911/"}, LEASE, "n1", MEMBERS) is Claim.MEMBER


def test_the_nodes_own_id_and_url_is_its_own_key() -> None:
    assert judge_leader_claim({"node_id": "n1", "url": "http://10.0.0.1:10911"}, LEASE, "n1", MEMBERS) is Claim.OWN


def test_an_unknown_node_is_foreign() -> None:
    assert judge_leader_claim({"node_id": "evil", "url": "http://127.0.0.1:23999"}, LEASE, "n1", MEMBERS) is Claim.FOREIGN


def test_a_members_id_with_another_url_or_a_members_url_with_another_id_is_foreign() -> None:
    assert judge_leader_claim({"node_id": "n2", "url": "http://127.0.0.1:23999"}, LEASE, "n1", MEMBERS) is Claim.FOREIGN
    assert judge_leader_claim({"node_id": "evil", "url": "http://10.0.0.2:10911"}, LEASE, "n1", MEMBERS) is Claim.FOREIGN
    assert judge_leader_claim({"node_id": "n3", "url": "http://10.0.0.2:10911"}, LEASE, "n1", MEMBERS) is Claim.FOREIGN
    assert judge_leader_claim({"node_id": "n1", "url": "http://127.0.0.1:10911"}, LEASE, "n1", MEMBERS) is Claim.FOREIGN


def test_a_key_without_a_lease_is_foreign_even_when_it_names_a_member() -> None:
    # every node writes its key under its lease: a plain put came from someone else
    assert judge_leader_claim({"node_id": "n2", "url": "http://10.0.0.2:10911"}, 0, "n1", MEMBERS) is Claim.FOREIGN


def test_anything_that_is_not_a_claim_is_foreign() -> None:
    for claim in (None, "n2", ["n2", "http://10.0.0.2:10911"], {"node_id": "n2"}, {"node_id": 2, "url": "http://10.0.0.2:10911"},
                  {"url": "http://10.0.0.2:10911"}, {"node_id": "n2", "url": None}):
        assert judge_leader_claim(claim, LEASE, "n1", MEMBERS) is Claim.FOREIGN, claim


def test_with_no_members_nothing_is_followed() -> None:
    assert judge_leader_claim({"node_id": "n2", "url": "http://10.0.0.2:10911"}, LEASE, "n1", {}) is Claim.FOREIGN


def test_a_foreign_key_is_removed_only_once_it_has_stood_a_whole_lease_ttl() -> None:
    assert not may_clear_foreign_claim(seen_since=100.0, now=100.0, lease_ttl=5)
    assert not may_clear_foreign_claim(seen_since=100.0, now=104.9, lease_ttl=5)  # a live leader puts its key back sooner
    assert may_clear_foreign_claim(seen_since=100.0, now=105.0, lease_ttl=5)
