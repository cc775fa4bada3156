"""The broker set's pure decisions, with a fake clock."""

from __future__ import annotations

from halfmq.broker.cluster.decisions import (
    Event,
    FollowerProgress,
    LeaseFence,
    Role,
    acknowledged_offset,
    in_sync_set,
    majority,
    may_campaign,
    next_role,
    quorum_possible,
)


def test_a_leader_stops_writing_before_its_lease_can_expire() -> None:
    fence = LeaseFence.for_ttl(5.0)
    sent = 100.0
    assert fence.may_write(100.0, sent)
    assert fence.may_write(103.7, sent)
    assert not fence.may_write(103.75, sent)  # a quarter of the TTL before etcd could drop the lease
    assert not fence.may_write(105.0, sent)
    assert not fence.may_write(100.0, None)  # never renewed: never writes


def test_the_margin_is_at_least_half_a_second_for_short_leases() -> None:
    assert LeaseFence.for_ttl(2.0).margin == 0.5
    assert LeaseFence.for_ttl(2.0).may_write(11.49, 10.0)
    assert not LeaseFence.for_ttl(2.0).may_write(11.5, 10.0)


def test_a_2_s_lease_is_renewed_at_least_4_times_before_its_fence() -> None:
    fence = LeaseFence.for_ttl(2.0)
    sent, now, tries = 10.0, 10.0, 0
    while fence.may_write(now + fence.renew_every, sent):  # each renewal fails; the next leaves renew_every later
        now += fence.renew_every
        tries += 1
    assert tries >= 4


def test_a_leader_gives_up_at_the_first_failed_renewal_past_the_fence_not_when_the_lease_ends() -> None:
    fence = LeaseFence.for_ttl(2.0)
    assert not fence.gives_up(11.4, 10.0)  # a failed renewal before the fence: try again
    assert fence.gives_up(11.5, 10.0)      # past it: step down, half a second before etcd could end the lease
    assert fence.gives_up(10.0, None)


def test_roles_move_only_along_the_transition_table() -> None:
    assert next_role(Role.FOLLOWER, Event.ELECTED) is Role.LEADER
    assert next_role(Role.LEADER, Event.RENEWAL_OVERDUE) is Role.FENCED
    assert next_role(Role.FENCED, Event.RENEWED) is Role.LEADER
    assert next_role(Role.FENCED, Event.LOST) is Role.FOLLOWER
    assert next_role(Role.FOLLOWER, Event.RENEWED) is Role.FOLLOWER  # not listed: unchanged


def test_only_an_in_sync_node_may_stand_for_election() -> None:
    assert may_campaign("n2", frozenset({"n1", "n2"}))
    assert not may_campaign("n3", frozenset({"n1", "n2"}))
    assert may_campaign("n3", None)  # a new set


def test_a_follower_that_stops_catching_up_leaves_the_in_sync_set_after_the_lag_time() -> None:
    progress = {"n2": FollowerProgress(500, caught_up_at=10.0), "n3": FollowerProgress(300, caught_up_at=7.0)}
    everyone = frozenset({"n1", "n2", "n3"})
    assert in_sync_set("n1", everyone, progress, now=11.0, lag_time=2.0, cluster_size=3) == frozenset({"n1", "n2"})
    assert in_sync_set("n1", everyone, progress, now=11.0, lag_time=2.0, cluster_size=5) == frozenset({"n1", "n2", "n3"})


def test_the_in_sync_set_never_shrinks_below_a_majority_keeping_the_furthest_follower() -> None:
    progress = {"n2": FollowerProgress(500, caught_up_at=1.0), "n3": FollowerProgress(300, caught_up_at=1.0)}
    everyone = frozenset({"n1", "n2", "n3"})
    assert in_sync_set("n1", everyone, progress, now=12.5, lag_time=2.0, cluster_size=3) == frozenset({"n1", "n2"})
    assert in_sync_set("n1", frozenset({"n1", "n3"}), progress, now=12.5, lag_time=2.0, cluster_size=3) == frozenset({"n1", "n3"})


def test_a_follower_that_catches_up_joins_the_in_sync_set() -> None:
    progress = {"n2": FollowerProgress(500, caught_up_at=11.0), "n3": FollowerProgress(600, caught_up_at=12.0)}
    assert in_sync_set("n1", frozenset({"n1", "n2"}), progress, now=12.5, lag_time=2.0, cluster_size=3) == frozenset({"n1", "n2", "n3"})


def test_a_write_is_acknowledged_only_as_far_as_every_in_sync_node_has_it_on_disk() -> None:
    progress = {"n2": FollowerProgress(500, 0.0), "n3": FollowerProgress(300, 0.0)}
    assert acknowledged_offset("n1", 600, frozenset({"n1", "n2"}), progress) == 500
    assert acknowledged_offset("n1", 600, frozenset({"n1", "n2", "n3"}), progress) == 300
    assert acknowledged_offset("n1", 400, frozenset({"n1", "n2"}), progress) == 400
    assert acknowledged_offset("n1", 600, frozenset({"n1", "n4"}), progress) == 0  # never heard from


def test_a_quorum_needs_a_majority_in_sync() -> None:
    assert majority(3) == 2 and majority(5) == 3
    assert quorum_possible(frozenset({"n1", "n2"}), 3)
    assert not quorum_possible(frozenset({"n1"}), 3)


def test_an_empty_in_sync_list_lets_anyone_campaign() -> None:
    assert may_campaign("n3", frozenset())


def test_a_follower_caught_up_exactly_the_lag_time_ago_is_still_in_sync() -> None:
    progress = {"n2": FollowerProgress(durable=10, caught_up_at=9.0)}
    assert in_sync_set("n1", frozenset({"n1", "n2"}), progress, now=11.0, lag_time=2.0, cluster_size=1) == frozenset({"n1", "n2"})


def test_to_keep_a_majority_the_furthest_lagging_members_stay_first_by_log_then_by_recency() -> None:
    everyone = frozenset({"n1", "a", "b", "c", "d"})
    progress = {"a": FollowerProgress(durable=95, caught_up_at=0.5), "b": FollowerProgress(durable=90, caught_up_at=1.0),
                "c": FollowerProgress(durable=90, caught_up_at=3.0)}  # d: never reported
    # five nodes need three: the leader, a (furthest log), then c (as far as b, but caught up later); b and d wait
    assert in_sync_set("n1", everyone, progress, now=100.0, lag_time=2.0, cluster_size=5) == frozenset({"n1", "a", "c"})
    # a node that never reported comes after every node that did, even one far behind
    few = {"a": FollowerProgress(durable=1, caught_up_at=1.0)}
    assert in_sync_set("n1", frozenset({"n1", "a", "d"}), few, now=100.0, lag_time=2.0, cluster_size=3) == frozenset({"n1", "a"})
    assert in_sync_set("n1", frozenset({"n1", "d", "a"}), {}, now=100.0, lag_time=2.0, cluster_size=3) in (frozenset({"n1", "a"}), frozenset({"n1", "d"}))


def test_a_follower_ends_a_dead_leaders_term_only_after_its_address_refused_connections_for_a_moment() -> None:
    from halfmq.broker.cluster.decisions import may_end_dead_term

    assert not may_end_dead_term(None, 10.0, "quorum")  # never refused
    assert not may_end_dead_term(10.0, 10.19, "quorum")
    assert may_end_dead_term(10.0, 10.25, "quorum")
    assert not may_end_dead_term(10.0, 99.0, "leader")  # with ack=leader only the lease may end a term
