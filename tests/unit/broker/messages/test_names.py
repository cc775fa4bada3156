"""One rule for every name a client chooses (broker/messages/names.py): topics, groups, transactional ids."""

from __future__ import annotations

import pytest

from halfmq.broker.messages.names import MAX_NAME_LENGTH, NameKind, checked_name, is_valid_name
from halfmq.errors import InvalidGroupName, InvalidTopicName, InvalidTransactionalId
from tests.support.crafted_names import CRAFTED


@pytest.mark.parametrize("name", ["copier", "bench-1-2", "order_producer_group", "A-z_0-9", "x" * MAX_NAME_LENGTH])
def test_plain_names_pass_for_every_kind(name: str) -> None:
    for kind in NameKind:
        assert checked_name(kind, name) == name


@pytest.mark.parametrize("name", list(CRAFTED.values()), ids=list(CRAFTED))
def test_a_crafted_name_is_refused_for_every_kind(name: str) -> None:
    assert not is_valid_name(name)
    for kind in NameKind:
        with pytest.raises((InvalidTopicName, InvalidGroupName, InvalidTransactionalId)):
            checked_name(kind, name)


def test_a_name_one_character_too_long_is_refused() -> None:
    assert not is_valid_name("x" * (MAX_NAME_LENGTH + 1))


@pytest.mark.parametrize(("kind", "code"), [(NameKind.TOPIC, "INVALID_TOPIC_NAME"), (NameKind.CONSUMER_GROUP, "INVALID_GROUP_NAME"),
                                            (NameKind.PRODUCER_GROUP, "INVALID_GROUP_NAME"),
                                            (NameKind.TRANSACTIONAL_ID, "INVALID_TRANSACTIONAL_ID")])
def test_each_kind_refuses_with_its_own_stable_400_code(kind: NameKind, code: str) -> None:
    with pytest.raises(Exception) as refused:
        checked_name(kind, "no spaces")
    assert refused.value.code == code and refused.value.status == 400


def test_the_refusal_shows_a_long_name_shortened_and_control_characters_escaped() -> None:
    with pytest.raises(InvalidTransactionalId) as refused:
        checked_name(NameKind.TRANSACTIONAL_ID, CRAFTED["right-to-left override"])
    assert "\u202e" not in refused.value.detail and "\\u202e" in refused.value.detail
    with pytest.raises(InvalidTransactionalId) as refused:
        checked_name(NameKind.TRANSACTIONAL_ID, CRAFTED["5,000 characters"])
    assert len(refused.value.detail) < 200 and "5000 characters" in refused.value.detail


def test_a_non_string_is_no_name() -> None:
    assert not is_valid_name(None) and not is_valid_name(42)


def test_a_refused_name_of_64_characters_is_shown_whole_and_one_of_65_is_cut_at_64() -> None:
    with pytest.raises(InvalidTopicName) as refused:
        checked_name(NameKind.TOPIC, "a" * 63 + " ")
    assert repr("a" * 63 + " ") in refused.value.detail and "characters)" not in refused.value.detail
    with pytest.raises(InvalidTopicName) as refused:
        checked_name(NameKind.TOPIC, "a" * 64 + " ")
    assert f"{'a' * 64}… (65 characters)" in refused.value.detail
