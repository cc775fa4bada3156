"""The SDK's list of broker URLs: follow NOT_LEADER to a listed node, else try the next one; leave a node that hangs."""

from __future__ import annotations

import pytest

from halfmq.client.broker_urls import Attempt, BrokerUrls, Failure, failure_of, next_url, round_pause, split_urls
from halfmq.errors import BrokerUnavailable, FlushDiskTimeout, NotLeader
from tests.support.fake_clock import FakeClock

A, B, C = "http://a:1", "http://b:2", "http://c:3"


def test_a_comma_separated_list_is_split_and_trimmed() -> None:
    assert split_urls(f" {A}/, {B} ,,{C}") == [A, B, C]


def test_not_leader_naming_a_listed_node_goes_there() -> None:
    urls = BrokerUrls([A, B, C])
    assert urls.redirect(NotLeader("follower", leader_url=C + "/"), A)
    assert urls.base == C


def test_not_leader_naming_an_unlisted_address_is_not_followed_the_next_node_is_asked() -> None:
    urls = BrokerUrls([A, B, C])
    assert urls.redirect(NotLeader("follower", leader_url="http://evil:1"), A)
    assert urls.base == B
    assert urls.redirect(NotLeader("no leader yet"), B)
    assert urls.base == C


def test_an_unreachable_node_is_repeated_elsewhere_but_one_that_took_the_request_is_only_left() -> None:
    # Issue 30 item 3 changed the second half: a node that took the request and did not answer is left (the next
    # calls start at the next node, here A again since B is the other one), but the call is not repeated here.
    urls = BrokerUrls([A, B])
    assert urls.redirect(BrokerUnavailable("refused", sent=False), A) and urls.base == B
    assert not urls.redirect(BrokerUnavailable("no answer", sent=True), B) and urls.base == A


def test_other_errors_and_a_single_url_never_redirect() -> None:
    assert not BrokerUrls([A, B]).redirect(FlushDiskTimeout("slow disk"), A)
    assert not BrokerUrls([A]).redirect(NotLeader("follower", leader_url=A), A)
    with pytest.raises(ValueError):
        BrokerUrls([])


NO_ANSWER = BrokerUnavailable("no answer within 5s", sent=True)
REFUSED = BrokerUnavailable("connection refused", sent=False)


def test_each_error_is_read_as_what_it_says_about_the_node() -> None:
    assert failure_of(NotLeader("follower", leader_url=A)) is Failure.NOT_LEADER
    assert failure_of(REFUSED) is Failure.UNREACHABLE
    assert failure_of(NO_ANSWER) is Failure.NO_ANSWER
    assert failure_of(FlushDiskTimeout("slow disk")) is Failure.ANSWERED
    assert Failure.NOT_LEADER.did_nothing and Failure.UNREACHABLE.did_nothing
    assert not Failure.NO_ANSWER.did_nothing and not Failure.ANSWERED.did_nothing


def test_after_a_timeout_the_next_url_is_asked() -> None:
    assert next_url([A, B, C], A, Failure.NO_ANSWER, suspects={A}) == B
    assert next_url([A, B, C], C, Failure.NO_ANSWER, suspects={C}) == A


def test_a_not_leader_naming_a_suspected_node_is_not_followed_back_to_it() -> None:
    assert next_url([A, B, C], B, Failure.NOT_LEADER, leader=A, suspects={A}) == C
    assert next_url([A, B, C], C, Failure.NOT_LEADER, leader=A, suspects={A}) == B
    assert next_url([A, B, C], B, Failure.NOT_LEADER, leader=A, suspects=()) == A


def test_suspected_nodes_are_skipped_until_every_other_one_is_suspected() -> None:
    assert next_url([A, B, C], A, Failure.UNREACHABLE, suspects={A, B}) == C
    assert next_url([A, B, C], A, Failure.UNREACHABLE, suspects={A, B, C}) == B


def test_when_every_other_node_is_suspected_the_named_leader_is_preferred() -> None:
    assert next_url([A, B, C], C, Failure.NOT_LEADER, leader=B, suspects={A, B}) == B


def test_an_answer_or_a_single_url_keeps_the_call_where_it_is() -> None:
    assert next_url([A, B], A, Failure.ANSWERED) is None
    assert next_url([A], A, Failure.NO_ANSWER) is None


def test_a_node_that_did_not_answer_is_suspected_only_for_a_while() -> None:
    clock = FakeClock()
    urls = BrokerUrls([A, B, C], suspect_for=5.0, clock=clock)
    assert urls.redirect(NO_ANSWER, A) is None and urls.base == B and urls.suspects() == {A}
    assert urls.redirect(NotLeader("follower", leader_url=A), B) == C
    clock.now += 5.0
    assert urls.suspects() == set()
    assert urls.redirect(NotLeader("follower", leader_url=A), C) == A


def test_a_call_that_failed_elsewhere_does_not_move_the_others_twice() -> None:
    urls = BrokerUrls([A, B, C])
    assert urls.redirect(NotLeader("follower", leader_url=C), A) == C and urls.base == C
    assert urls.redirect(REFUSED, A) == B and urls.base == C  # a late failure of A: the calls stay on C


def test_a_route_through_an_election_pauses_after_each_round_and_ends_on_a_leader() -> None:
    # A hangs; B and C still name it until the set elects another leader.
    clock = FakeClock()
    urls = BrokerUrls([A, B, C], suspect_for=5.0, clock=clock)
    assert urls.route().after(NO_ANSWER, A) is None  # the timed-out call is the caller's to repeat
    route = urls.route()
    assert route.first() == Attempt(B)
    assert route.after(NotLeader("follower", leader_url=A), B) == Attempt(C)
    assert route.after(NotLeader("follower", leader_url=A), C) == Attempt(B, round_pause(1))
    assert route.after(NotLeader("no leader yet"), B) == Attempt(C)
    assert route.after(NotLeader("follower", leader_url=B), C) == Attempt(B)  # the new leader, asked at once


def test_two_nodes_naming_each_other_are_asked_once_each_then_after_a_pause() -> None:
    route = BrokerUrls([A, B, C]).route()
    assert route.after(NotLeader("follower", leader_url=B), A) == Attempt(B)
    assert route.after(NotLeader("follower", leader_url=A), B) == Attempt(A)
    assert route.after(NotLeader("follower", leader_url=B), A) == Attempt(B, round_pause(1))


def test_a_route_gives_up_when_no_node_can_be_reached_or_the_wait_for_a_leader_is_over() -> None:
    clock = FakeClock()
    urls = BrokerUrls([A, B], clock=clock, leader_wait=1.0)
    route = urls.route()
    assert route.after(REFUSED, A) == Attempt(B)
    assert route.after(REFUSED, B) is None  # the whole set refused: down, not electing
    route = urls.route()
    assert route.after(NotLeader("no leader yet"), A) == Attempt(B)
    clock.now += 1.0
    assert route.after(NotLeader("no leader yet"), B) is None


def test_a_route_on_one_url_never_repeats_the_call() -> None:
    route = BrokerUrls([A]).route()
    assert route.first() == Attempt(A)
    assert route.after(REFUSED, A) is None
    assert route.after(NotLeader("follower"), A) is None


def test_the_pauses_between_rounds_grow_but_stay_short() -> None:
    assert [round_pause(n) for n in (1, 2, 3, 4, 10)] == [0.1, 0.2, 0.25, 0.25, 0.25]
