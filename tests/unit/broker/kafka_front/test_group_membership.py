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
