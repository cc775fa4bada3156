from __future__ import annotations

import pytest

from halfmq.broker.security.policy import (
    CLUSTER,
    Action,
    Kind,
    Policy,
    Principal,
    Resource,
    ResourcePattern,
    decide,
    may_publish_somewhere,
)


def principal(*policies: tuple[list[str], list[str]]) -> Principal:
    return Principal("p", tuple(Policy.parse(a, r) for a, r in policies))


def test_nothing_is_allowed_without_a_policy():
    assert not decide(Principal("nobody"), Action.PUBLISH, Resource.topic("ORDER_TOPIC")).allowed


def test_a_literal_pattern_matches_only_that_name():
    p = principal((["publish"], ["topic:ORDER_TOPIC"]))
    assert decide(p, Action.PUBLISH, Resource.topic("ORDER_TOPIC")).allowed
    assert not decide(p, Action.PUBLISH, Resource.topic("ORDER_TOPIC2")).allowed


def test_a_prefix_pattern_matches_names_that_start_with_it():
    p = principal((["publish"], ["topic:ORDER_*"]))
    assert decide(p, Action.PUBLISH, Resource.topic("ORDER_EU")).allowed
    assert not decide(p, Action.PUBLISH, Resource.topic("PAYMENTS")).allowed


def test_a_pattern_of_one_kind_does_not_match_another_kind():
    p = principal((["publish"], ["group:orders"]))
    assert not decide(p, Action.PUBLISH, Resource.topic("orders")).allowed
    assert decide(p, Action.PUBLISH, Resource.group("orders")).allowed


def test_publish_does_not_allow_subscribe_and_the_reverse():
    p = principal((["publish"], ["topic:T"]))
    assert not decide(p, Action.SUBSCRIBE, Resource.topic("T")).allowed
    s = principal((["subscribe"], ["topic:T"]))
    assert not decide(s, Action.PUBLISH, Resource.topic("T")).allowed


def test_publish_and_subscribe_imply_describe_and_admin_implies_everything():
    assert decide(principal((["publish"], ["topic:T"])), Action.DESCRIBE, Resource.topic("T")).allowed
    assert decide(principal((["subscribe"], ["topic:T"])), Action.DESCRIBE, Resource.topic("T")).allowed
    admin = principal((["admin"], ["*"]))
    for action in Action:
        assert decide(admin, action, Resource.group("any")).allowed
    assert decide(admin, Action.ADMIN, CLUSTER).allowed


def test_system_topics_need_admin_whatever_the_action():
    p = principal((["publish", "subscribe"], ["topic:*"]))
    for topic in ("RMQ_SYS_TRANS_HALF_TOPIC", "RMQ_SYS_TRANS_OP_HALF_TOPIC", "TRANS_CHECK_MAX_TIME_TOPIC", "%DLQ%g"):
        decision = decide(p, Action.SUBSCRIBE, Resource.topic(topic))
        assert not decision.allowed
        assert decision.action is Action.ADMIN
    assert decide(principal((["admin"], ["topic:*"])), Action.SUBSCRIBE, Resource.topic("RMQ_SYS_TRANS_HALF_TOPIC")).allowed


def test_cluster_operations_need_admin_on_the_cluster():
    assert not decide(principal((["admin"], ["topic:*", "group:*"])), Action.ADMIN, CLUSTER).allowed
    assert decide(principal((["admin"], ["cluster:*"])), Action.ADMIN, CLUSTER).allowed


@pytest.mark.parametrize("text", ["ORDER_TOPIC", "topic:", "queue:x", "topic:A*B"])
def test_malformed_patterns_are_refused(text):
    with pytest.raises(ValueError):
        ResourcePattern.parse(text)


def test_describe_cannot_be_granted():
    with pytest.raises(ValueError):
        Policy.parse(["describe"], ["topic:T"])


def test_any_kind_pattern_parses():
    assert ResourcePattern.parse("*:x").kind is None
    assert ResourcePattern.parse("transactional-id:tx-*").kind is Kind.TRANSACTIONAL_ID


@pytest.mark.parametrize(("actions", "allowed"), [
    (["publish"], True), (["admin"], True), (["subscribe"], False), (["subscribe", "publish"], True),
])
def test_an_idempotent_producer_id_is_for_principals_that_may_publish_something(actions: list[str], allowed: bool) -> None:
    principal = Principal("p", (Policy.parse(actions, ["topic:orders-*"]),))
    assert may_publish_somewhere(principal) is allowed
    assert may_publish_somewhere(Principal("nobody")) is False
