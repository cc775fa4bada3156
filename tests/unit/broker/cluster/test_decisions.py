"""The broker set's pure decisions, with a fake clock."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from halfmq.broker.cluster.decisions import (
    Event,
    FollowerProgress,
    LeaseFence,
    Role,
    acknowledged_offset,
    high_watermark,
    in_sync_set,
    majority,
    may_campaign,
    may_lead,
    next_role,
    out_of_touch,
    quorum_possible,
    steps_down_cut_off,
)
from halfmq.wire import Position


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


def test_a_write_is_acknowledged_as_far_as_a_majority_in_sync_has_it_on_disk_the_leader_one_vote() -> None:
    progress = {"n2": FollowerProgress(500, 0.0), "n3": FollowerProgress(300, 0.0)}
    everyone = frozenset({"n1", "n2", "n3"})
    assert acknowledged_offset("n1", 600, everyone, progress, cluster_size=3) == 500  # the leader and n2; n3 not waited for
    assert acknowledged_offset("n1", 400, everyone, progress, cluster_size=3) == 400
    assert acknowledged_offset("n1", 200, everyone, progress, cluster_size=3) == 300
    assert acknowledged_offset("n1", 600, frozenset({"n1", "n3"}), progress, cluster_size=3) == 300  # only the in-sync set counts
    assert acknowledged_offset("n1", 600, frozenset({"n1", "n4"}), progress, cluster_size=3) == 0  # never heard from
    assert acknowledged_offset("n1", 600, frozenset({"n1"}), progress, cluster_size=3) == 0  # no majority at all
    five = {"a": FollowerProgress(900, 0.0), "b": FollowerProgress(800, 0.0), "c": FollowerProgress(100, 0.0)}
    assert acknowledged_offset("n1", 600, frozenset({"n1", "a", "b", "c"}), five, cluster_size=5) == 600  # three of five


def test_a_leader_counts_nothing_until_a_majority_has_the_start_of_its_term() -> None:
    progress = {"n2": FollowerProgress(500, 0.0), "n3": FollowerProgress(300, 0.0)}
    everyone = frozenset({"n1", "n2", "n3"})
    assert acknowledged_offset("n1", 700, everyone, progress, cluster_size=3, term_start=600) == 0
    assert acknowledged_offset("n1", 700, everyone, progress, cluster_size=3, term_start=500) == 500
    assert high_watermark(250, "n1", 700, everyone, progress, cluster_size=3, term_start=600) == 250  # never less than before


def _at(last_term: int, durable: int, node_id: str = "n") -> Position:
    return Position(node_id=node_id, term=last_term, last_term=last_term, durable_offset=durable)


def test_a_node_behind_a_reachable_in_sync_peer_does_not_stand_for_election() -> None:
    in_sync = frozenset({"n1", "n2", "n3"})
    assert not may_lead(_at(4, 300), {"n2": _at(4, 500)}, in_sync, cluster_size=3)
    assert not may_lead(_at(3, 900), {"n2": _at(4, 500)}, in_sync, cluster_size=3)  # a later term wins over a longer log
    assert may_lead(_at(4, 500), {"n2": _at(4, 300)}, in_sync, cluster_size=3)
    assert may_lead(_at(4, 500), {"n2": _at(4, 500)}, in_sync, cluster_size=3)  # as far along: either may stand


def test_a_node_stands_only_with_a_majority_of_the_cluster_answering() -> None:
    in_sync = frozenset({"n1", "n2", "n3"})
    assert not may_lead(_at(4, 500), {}, in_sync, cluster_size=3)  # alone: a stopped peer may hold more
    assert may_lead(_at(4, 500), {}, frozenset({"n1"}), cluster_size=1)
    assert not may_lead(_at(4, 500), {"b": _at(4, 1)}, frozenset({"n1", "b", "c"}), cluster_size=5)
    assert may_lead(_at(4, 500), {"b": _at(4, 1), "c": _at(2, 9)}, frozenset({"n1", "b", "c"}), cluster_size=5)


def test_a_member_out_of_the_in_sync_set_counts_towards_the_majority_but_not_as_later() -> None:
    # the leader n3 died after n2 dropped out: n1, the last in-sync follower, stands with n2's answer
    assert may_lead(_at(4, 500), {"n2": _at(4, 200)}, frozenset({"n1", "n3"}), cluster_size=3)
    assert may_lead(_at(4, 500), {"n2": _at(4, 900)}, frozenset({"n1", "n3"}), cluster_size=3)  # its extra bytes were never acknowledged


def test_in_a_set_that_never_published_an_in_sync_list_a_node_stands_even_alone_unless_a_member_is_ahead() -> None:
    assert may_lead(_at(0, 0), {}, None, cluster_size=3)  # nothing was ever acknowledged
    assert not may_lead(_at(4, 500), {"n2": _at(4, 900)}, None, cluster_size=3)  # every answer compared
    assert not may_lead(_at(4, 500), {"n2": _at(4, 900)}, frozenset(), cluster_size=3)
    assert may_lead(_at(4, 900), {"n2": _at(4, 500)}, frozenset(), cluster_size=3)


def test_a_lagging_follower_stays_in_sync_while_the_others_could_not_hold_the_acknowledged_offset_on_a_majority() -> None:
    everyone = frozenset({"n1", "n2", "n3"})
    progress = {"n2": FollowerProgress(500, caught_up_at=0.0), "n3": FollowerProgress(900, caught_up_at=10.0)}
    # n2 is behind for longer than the lag time; n3 and the leader have the acknowledged 800: n2 may go
    assert in_sync_set("n1", everyone, progress, now=11.0, lag_time=2.0, cluster_size=3, leader_durable=900,
                       acknowledged=800) == frozenset({"n1", "n3"})
    # a new leader n2 keeps the old leader n1 (it may hold what n1 acknowledged up to 800) until n3 has it too
    new_term = {"n1": FollowerProgress(0, caught_up_at=float("-inf")), "n3": FollowerProgress(500, caught_up_at=10.0)}
    assert in_sync_set("n2", everyone, new_term, now=11.0, lag_time=2.0, cluster_size=3, leader_durable=900,
                       acknowledged=800) == everyone
    new_term["n3"] = FollowerProgress(900, caught_up_at=11.0)
    assert in_sync_set("n2", everyone, new_term, now=11.0, lag_time=2.0, cluster_size=3, leader_durable=900,
                       acknowledged=800) == frozenset({"n2", "n3"})
    # five nodes: the leader, c, and two lagging followers have it; one of those two stays, and one is enough
    five = frozenset({"n1", "a", "b", "c", "d"})
    behind = {"a": FollowerProgress(800, 0.0), "b": FollowerProgress(800, 0.0), "c": FollowerProgress(800, 10.0),
              "d": FollowerProgress(100, 10.0)}
    assert in_sync_set("n1", five, behind, now=11.0, lag_time=2.0, cluster_size=5, leader_durable=800,
                       acknowledged=800) in (frozenset({"n1", "a", "c", "d"}), frozenset({"n1", "b", "c", "d"}))


@st.composite
def _histories(draw: st.DrawFn) -> tuple[int, list[tuple[str, int, int]]]:
    size = draw(st.sampled_from([3, 5]))
    followers = [f"f{i}" for i in range(1, size)]
    steps = draw(st.lists(st.one_of(
        st.tuples(st.just("write"), st.just(0), st.integers(1, 100)),
        st.tuples(st.just("report"), st.integers(0, size - 2), st.integers(0, 100)),
        st.tuples(st.just("tick"), st.just(0), st.integers(0, 3)),
    ), max_size=60))
    return size, [(kind, followers[i] if kind == "report" else "", n) for kind, i, n in steps]


@given(_histories())
def test_the_in_sync_set_never_drops_a_node_needed_for_a_majority_of_an_acknowledged_offset(
        history: tuple[int, list[tuple[str, str, int]]]) -> None:
    size, steps = history
    now, end, acknowledged = 0.0, 0, 0
    current = frozenset({"n1"} | {f"f{i}" for i in range(1, size)})
    progress = {f"f{i}": FollowerProgress(0, now) for i in range(1, size)}
    for kind, node, n in steps:
        if kind == "write":
            end += n  # the leader's own fsync is its vote
        elif kind == "report":
            durable = min(end, progress[node].durable + n)
            progress[node] = FollowerProgress(durable, now if durable >= end else progress[node].caught_up_at)
        else:
            now += n
        acknowledged = max(acknowledged, acknowledged_offset("n1", end, current, progress, size))
        current = in_sync_set("n1", current, progress, now, lag_time=2.0, cluster_size=size, high_watermark=acknowledged,
                              leader_durable=end, acknowledged=acknowledged)
        holders = [m for m in current if (end if m == "n1" else progress[m].durable) >= acknowledged]
        assert len(holders) >= majority(size), (current, progress, acknowledged)


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


def test_a_leader_is_in_touch_while_a_majority_with_it_fetched_within_the_window_counting_the_edge() -> None:
    heard = {"n2": FollowerProgress(0, 0.0, heard_at=94.0), "n3": FollowerProgress(0, 0.0, heard_at=50.0)}
    assert not out_of_touch("n1", heard, now=100.0, window=6.0, cluster_size=3)  # n2 exactly 6 s ago still counts
    assert out_of_touch("n1", heard, now=100.001, window=6.0, cluster_size=3)
    assert out_of_touch("n1", {}, now=100.0, window=6.0, cluster_size=3)
    assert not out_of_touch("n1", {}, now=100.0, window=6.0, cluster_size=1)  # alone is a majority of one


def test_the_leaders_own_entry_never_counts_and_a_follower_not_yet_asked_counts_as_heard() -> None:
    own = {"n1": FollowerProgress(0, 0.0, heard_at=100.0), "n2": FollowerProgress(0, 0.0, heard_at=0.0)}
    assert out_of_touch("n1", own, now=100.0, window=6.0, cluster_size=3)
    assert not out_of_touch("n1", {"n2": FollowerProgress(0, 0.0)}, now=100.0, window=6.0, cluster_size=3)


def test_five_nodes_need_two_followers_in_touch() -> None:
    one = {"n2": FollowerProgress(0, 0.0, heard_at=99.0), "n3": FollowerProgress(0, 0.0, heard_at=1.0)}
    two = {**one, "n4": FollowerProgress(0, 0.0, heard_at=99.0)}
    assert out_of_touch("n1", one, now=100.0, window=6.0, cluster_size=5)
    assert not out_of_touch("n1", two, now=100.0, window=6.0, cluster_size=5)


def test_a_cut_off_leader_steps_down_only_with_quorum_acks_and_once_a_majority_is_in_sync() -> None:
    assert steps_down_cut_off("quorum", in_sync=2, cut_off=True, cluster_size=3)
    assert not steps_down_cut_off("quorum", in_sync=2, cut_off=False, cluster_size=3)
    assert not steps_down_cut_off("leader", in_sync=3, cut_off=True, cluster_size=3)  # it can still acknowledge: its lease decides
    assert not steps_down_cut_off("quorum", in_sync=1, cut_off=True, cluster_size=3)  # nobody else could be elected
    assert not steps_down_cut_off("quorum", in_sync=2, cut_off=True, cluster_size=5)
    assert steps_down_cut_off("quorum", in_sync=3, cut_off=True, cluster_size=5)
