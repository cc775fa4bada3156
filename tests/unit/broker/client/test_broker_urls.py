"""The SDK's list of broker URLs: follow NOT_LEADER to a listed node, else try the next one."""

from __future__ import annotations

import pytest

from halfmq.broker.errors import BrokerUnavailable, FlushDiskTimeout, NotLeader
from halfmq.client.broker_urls import BrokerUrls, split_urls

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


def test_an_unreachable_node_moves_on_only_if_the_request_was_not_sent() -> None:
    urls = BrokerUrls([A, B])
    assert urls.redirect(BrokerUnavailable("refused", sent=False), A) and urls.base == B
    assert not urls.redirect(BrokerUnavailable("no answer", sent=True), B) and urls.base == B


def test_other_errors_and_a_single_url_never_redirect() -> None:
    assert not BrokerUrls([A, B]).redirect(FlushDiskTimeout("slow disk"), A)
    assert not BrokerUrls([A]).redirect(NotLeader("follower", leader_url=A), A)
    with pytest.raises(ValueError):
        BrokerUrls([])
