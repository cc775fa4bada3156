"""A topic's configs from Kafka's admin clients, read as its own retention: honoured, kept, reset or refused."""

from __future__ import annotations

import pytest

from halfmq.broker.kafka_front.errors import InvalidConfig, InvalidRequest
from halfmq.broker.kafka_front.topic_configs import APPEND, DELETE, SET, SUBTRACT, altered_retention, named_retention

BROKER = {"retention.ms": "604800000", "retention.bytes": "-1", "cleanup.policy": "delete", "max.message.bytes": "4096"}


def test_a_new_topic_s_retention_configs_are_its_own_limits() -> None:
    assert named_retention([("retention.ms", "60000"), ("retention.bytes", "1048576")], BROKER) == (60000, 1048576)


def test_a_limit_not_named_or_null_is_the_broker_s() -> None:
    assert named_retention([], BROKER) == (None, None)
    assert named_retention([("retention.ms", None), ("retention.bytes", "10")], BROKER) == (None, 10)


def test_no_size_limit_is_the_broker_s_when_the_broker_has_none_and_refused_for_time() -> None:
    assert named_retention([("retention.bytes", "-1")], BROKER) == (None, None)
    with pytest.raises(InvalidConfig, match="within a limit"):
        named_retention([("retention.ms", "-1")], BROKER)
    with pytest.raises(InvalidConfig):
        named_retention([("retention.bytes", "-1")], {**BROKER, "retention.bytes": "1000"})


@pytest.mark.parametrize("value", ["abc", "1.5", "", "-7"])
def test_a_value_that_is_not_a_limit_is_an_invalid_config(value: str) -> None:
    with pytest.raises(InvalidConfig):
        named_retention([("retention.ms", value)], BROKER)


def test_the_broker_s_configs_written_back_as_they_are_change_nothing_and_another_value_is_refused() -> None:
    assert named_retention([("cleanup.policy", "delete"), ("max.message.bytes", "4096")], BROKER) == (None, None)
    with pytest.raises(InvalidConfig, match="cleanup.policy is delete on every topic"):
        named_retention([("cleanup.policy", "compact")], BROKER)


def test_a_config_halfmq_does_not_honour_is_refused() -> None:
    with pytest.raises(InvalidConfig, match="segment.bytes"):
        named_retention([("segment.bytes", "1024")], BROKER)


def test_an_incremental_change_sets_and_deletes_the_named_limits_and_keeps_the_others() -> None:
    assert altered_retention([("retention.ms", SET, "120000")], (60000, 1048576), BROKER) == (120000, 1048576)
    assert altered_retention([("retention.bytes", DELETE, None)], (60000, 1048576), BROKER) == (60000, None)
    assert altered_retention([("cleanup.policy", DELETE, None)], (60000, None), BROKER) == (60000, None)


@pytest.mark.parametrize("op", [APPEND, SUBTRACT, 9])
def test_appending_to_or_subtracting_from_a_limit_is_an_invalid_request(op: int) -> None:
    with pytest.raises(InvalidRequest):
        altered_retention([("retention.ms", op, "1")], (None, None), BROKER)


def test_one_bad_change_refuses_the_whole_resource() -> None:
    with pytest.raises(InvalidConfig):
        altered_retention([("retention.ms", SET, "120000"), ("segment.ms", SET, "1")], (None, None), BROKER)
