"""What the simple consumer settles: received messages or receipt handles, as Kafka and RocketMQ users pass them."""

from __future__ import annotations

import pytest

from halfmq.client.simple_consumer import receipt_handles
from halfmq.wire import Message


def message(handle: str | None) -> Message:
    return Message(msg_id="m", topic="T", queue_id=0, queue_offset=0, commit_log_offset=0, born_timestamp=0,
                   store_timestamp=0, body="x", receipt_handle=handle)


def test_receipt_handles_takes_received_messages_and_handles_alike() -> None:
    assert receipt_handles([message("h1"), "h2"]) == ["h1", "h2"]


def test_an_offset_read_s_message_has_no_handle_and_is_refused_by_name() -> None:
    with pytest.raises(TypeError, match="without a receipt handle"):
        receipt_handles([message(None)])


def test_one_string_is_refused_rather_than_settled_character_by_character() -> None:
    with pytest.raises(TypeError, match="not one string"):
        receipt_handles("h1")  # type: ignore[arg-type]
