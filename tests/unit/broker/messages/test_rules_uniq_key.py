"""A message whose only property is its producer's UNIQ_KEY takes the inline path and keeps that key."""

from __future__ import annotations

import pytest

from halfmq.broker.messages.rules import MessageLimits, message_properties, own_uniq_key
from halfmq.wire import OutgoingMessage


def never() -> str:
    raise AssertionError("a message with its own UNIQ_KEY needs no new one")


def test_a_valid_own_uniq_key_alone_is_taken_as_it_is() -> None:
    msg = OutgoingMessage(body="x", properties={"UNIQ_KEY": "7F0000011C2A18B4AAC2"})
    assert own_uniq_key(msg) == "7F0000011C2A18B4AAC2"
    assert message_properties(msg, never, MessageLimits()) == {"UNIQ_KEY": "7F0000011C2A18B4AAC2"}


@pytest.mark.parametrize("properties", [
    {"UNIQ_KEY": ""}, {"UNIQ_KEY": "has space"}, {"UNIQ_KEY": "x" * 129}, {"UNIQ_KEY": "a\x01b"},
    {"UNIQ_KEY": "k", "other": "v"}, {"OTHER": "v"},
])
def test_anything_else_goes_to_the_general_path(properties: dict[str, str]) -> None:
    assert own_uniq_key(OutgoingMessage(body="x", properties=properties)) is None
