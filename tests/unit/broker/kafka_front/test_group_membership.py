"""A Kafka consumer group's membership: who leads, when a rebalance completes, who is dropped, under a fake clock."""

from __future__ import annotations

import pytest
from kafka import errors as kafka_errors

from halfmq.broker.kafka_front.group_membership import GroupState, KafkaGroup, MembershipError

RANGE = [("range", b"range-meta")]
SESSION, REBALANCE = 10_000, 30_000


def joined(group: KafkaGroup, member: str, now: float, protocols: list[tuple[str, bytes]] = RANGE, max_members: int = 10) -> None:
    group.join(member, "consumer", protocols, SESSION, REBALANCE, now, max_members)


def code(exc: pytest.ExceptionInfo[MembershipError]) -> int:
    return exc.value.error_code


def test_the_first_member_leads_and_alone_completes_the_rebalance_at_once() -> None:
    group = KafkaGroup("g")
    joined(group, "a", 0)
    assert group.ready(0)
    answers = group.complete(0)
    assert group.state is GroupState.COMPLETING_REBALANCE
    assert (answers["a"].generation, answers["a"].leader, answers["a"].protocol_name) == (1, "a", "range")
    assert answers["a"].members == [("a", b"range-meta")]


def test_a_second_member_starts_a_rebalance_the_first_learns_from_its_heartbeat() -> None:
    group = KafkaGroup("g")
    joined(group, "a", 0)
    group.complete(0)
    group.sync("a", 1, {"a": b"all"}, 0)
    joined(group, "b", 1)
    with pytest.raises(MembershipError) as refused:
        group.check("a", 1, 2)
    assert code(refused) == kafka_errors.RebalanceInProgressError.errno
    assert not group.ready(2)  # a has not joined again
    joined(group, "a", 3)
    answers = group.complete(3)
    assert answers["a"].members and not answers["b"].members  # the leader alone gets the member list
    assert answers["b"].generation == 2


def test_a_member_that_does_not_join_again_within_the_rebalance_timeout_is_dropped() -> None:
    group = KafkaGroup("g")
    joined(group, "a", 0)
    group.complete(0)
    joined(group, "b", 100)
    assert not group.ready(100 + REBALANCE - 1)
    assert group.ready(100 + REBALANCE)
    answers = group.complete(100 + REBALANCE)
    assert list(answers) == ["b"] and answers["b"].leader == "b"


def test_a_member_silent_past_its_session_timeout_is_dropped_and_the_rest_rebalance() -> None:
    group = KafkaGroup("g")
    joined(group, "a", 0)
    joined(group, "b", 0)
    group.complete(0)
    group.sync("a", 1, {"a": b"1", "b": b"2"}, 0)
    group.check("a", 1, SESSION)
    assert group.expire(SESSION + 1) == ["b"]
    assert group.state is GroupState.PREPARING_REBALANCE


def test_the_leaders_sync_hands_each_member_its_assignment_and_settles_the_group() -> None:
    group = KafkaGroup("g")
    joined(group, "a", 0)
    joined(group, "b", 0)
    group.complete(0)
    assert group.sync("b", 1, {}, 0) is None  # the leader has not synced
    assert group.sync("a", 1, {"a": b"p0", "b": b"p1"}, 0) == b"p0"
    assert group.state is GroupState.STABLE
    assert group.sync("b", 1, {}, 0) == b"p1"


def test_a_stale_generation_an_unknown_member_and_no_common_assignor_are_refused() -> None:
    group = KafkaGroup("g")
    joined(group, "a", 0)
    group.complete(0)
    with pytest.raises(MembershipError) as stale:
        group.check("a", 0, 0)
    with pytest.raises(MembershipError) as unknown:
        group.check("z", 1, 0)
    with pytest.raises(MembershipError) as foreign:
        joined(group, "b", 0, protocols=[("sticky", b"")])
    assert [code(stale), code(unknown), code(foreign)] == [kafka_errors.IllegalGenerationError.errno,
                                                          kafka_errors.UnknownMemberIdError.errno,
                                                          kafka_errors.InconsistentGroupProtocolError.errno]


def test_a_join_past_the_members_bound_is_refused_and_changes_nothing() -> None:
    group = KafkaGroup("g")
    joined(group, "a", 0, max_members=1)
    with pytest.raises(MembershipError) as full:
        joined(group, "b", 0, max_members=1)
    assert code(full) == kafka_errors.GroupMaxSizeReachedError.errno
    assert list(group.members) == ["a"]


def test_the_last_member_leaving_empties_the_group() -> None:
    group = KafkaGroup("g")
    joined(group, "a", 0)
    group.complete(0)
    group.leave("a", 1)
    assert group.state is GroupState.EMPTY and not group.members


def settled(group: KafkaGroup, members: list[str], now: float, instances: dict[str, str] | None = None) -> int:
    """``members`` joined (with their static instance ids) and the rebalance completed: the generation."""
    for member in members:
        group.join(member, "consumer", RANGE, SESSION, REBALANCE, now, 10, group_instance_id=(instances or {}).get(member))
    return group.complete(now)[members[0]].generation


def test_a_transactional_offset_commit_of_the_current_member_and_generation_is_taken() -> None:
    group = KafkaGroup("g")
    generation = settled(group, ["a"], 0)
    group.check_txn_offset_commit("a", generation, None)


def test_a_transactional_offset_commit_without_group_metadata_is_not_checked() -> None:
    KafkaGroup("g").check_txn_offset_commit("", -1, None)  # v0-2, or a client naming only the group: nothing to fence


def test_a_zombie_whose_group_moved_to_a_new_generation_is_refused_illegal_generation() -> None:
    group = KafkaGroup("g")
    before = settled(group, ["a"], 0)
    settled(group, ["a", "b"], 1)  # b joined: a rebalance, a new generation
    with pytest.raises(MembershipError) as refused:
        group.check_txn_offset_commit("a", before, None)
    assert code(refused) == kafka_errors.IllegalGenerationError.errno


def test_a_zombie_dropped_from_the_group_is_refused_unknown_member_id() -> None:
    group = KafkaGroup("g")
    generation = settled(group, ["a", "b"], 0)
    group.leave("a", 1)
    with pytest.raises(MembershipError) as refused:
        group.check_txn_offset_commit("a", generation, None)
    assert code(refused) == kafka_errors.UnknownMemberIdError.errno
    with pytest.raises(MembershipError) as unheld:
        KafkaGroup("other").check_txn_offset_commit("a", generation, None)  # a group the front does not hold: no members
    assert code(unheld) == kafka_errors.UnknownMemberIdError.errno


def test_a_zombie_whose_static_instance_id_a_newer_member_holds_is_refused_fenced_instance_id() -> None:
    group = KafkaGroup("g")
    generation = settled(group, ["old"], 0, {"old": "copier-1"})
    settled(group, ["old", "new"], 1, {"new": "copier-1"})  # the instance restarted as a new member
    with pytest.raises(MembershipError) as refused:
        group.check_txn_offset_commit("old", generation, "copier-1")
    assert code(refused) == kafka_errors.FencedInstanceIdError.errno
    group.check_txn_offset_commit("new", group.generation, "copier-1")
