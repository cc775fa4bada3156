"""Each request is spelled once, in ``halfmq.wire``: the SDK builds it, the broker decodes a body with it."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from halfmq import wire
from halfmq.errors import BrokerError, InvalidDeliveryTime, InvalidMessageGroup, InvalidRequest
from halfmq.wire.messages import MAX_FILTER_TAGS, subscription_tags


def _decoded(shape: type[msgspec.Struct], fields: dict[str, Any]) -> msgspec.Struct:
    """``fields`` as the broker decodes a request body of ``shape``: a struct's typed refusal is its own error (body.py)."""
    try:
        return msgspec.json.decode(msgspec.json.encode(fields), type=shape)
    except msgspec.ValidationError as exc:
        if isinstance(exc.__cause__, BrokerError):
            raise exc.__cause__ from None
        raise


@pytest.mark.parametrize("fields", [
    {"body": "x", "tag": "t" * (wire.MAX_TAG_LENGTH + 1)},
    {"body": "x", "queue_id": -1},
    {"body": "x", "body_encoding": "latin-1"},
    {"body": "x", "delay_ms": -1},
])
def test_an_outgoing_message_the_broker_would_refuse_is_refused_where_it_is_built(fields: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        wire.OutgoingMessage(**fields)  # type: ignore[arg-type]
    with pytest.raises(msgspec.ValidationError):
        _decoded(wire.OutgoingMessage, fields)


EMOJI = "\N{GRINNING FACE}"  # one character, four bytes of UTF-8


def test_a_tag_and_a_nack_reason_are_limited_in_characters_and_say_so() -> None:
    """Labels a person reads: 255 and 256 characters, so at most 1,020 and 1,024 bytes of UTF-8 (the broker counts the tag's
    bytes again toward MAX_PROPERTIES_BYTES). Multi-byte text up to the count passes; one character more does not."""
    assert wire.OutgoingMessage(body="x", tag=EMOJI * wire.MAX_TAG_LENGTH).tag == EMOJI * wire.MAX_TAG_LENGTH
    assert _decoded(wire.OutgoingMessage, {"body": "x", "tag": EMOJI * wire.MAX_TAG_LENGTH}) == wire.OutgoingMessage(
        body="x", tag=EMOJI * wire.MAX_TAG_LENGTH)
    with pytest.raises(ValueError, match="characters"):
        wire.OutgoingMessage(body="x", tag=EMOJI * (wire.MAX_TAG_LENGTH + 1))
    with pytest.raises(msgspec.ValidationError, match="length <= 255"):
        _decoded(wire.OutgoingMessage, {"body": "x", "tag": EMOJI * (wire.MAX_TAG_LENGTH + 1)})
    reason = EMOJI * wire.MAX_NACK_REASON
    assert _decoded(wire.NackRequest, {"receipt_handles": ["h"], "reason": reason}) == wire.NackRequest(
        receipt_handles=["h"], reason=reason)
    with pytest.raises(msgspec.ValidationError, match="reason"):
        _decoded(wire.NackRequest, {"receipt_handles": ["h"], "reason": reason + "x"})


def test_a_message_group_is_limited_in_utf8_bytes_where_it_is_built_and_where_it_is_decoded() -> None:
    assert wire.OutgoingMessage(body="x", message_group=EMOJI * 16).message_group == EMOJI * 16  # 64 bytes
    with pytest.raises(InvalidMessageGroup, match="bytes"):
        wire.OutgoingMessage(body="x", message_group=EMOJI * 16 + "x")  # 17 characters, 65 bytes
    with pytest.raises(InvalidMessageGroup, match="bytes"):  # the broker's own code, not msgspec's ValidationError
        _decoded(wire.SendRequest, {"messages": [{"body": "x", "message_group": EMOJI * 16 + "x"}]})


def test_both_delivery_times_are_the_brokers_invalid_delivery_time_where_built_and_where_decoded() -> None:
    with pytest.raises(InvalidDeliveryTime):
        wire.OutgoingMessage(body="x", deliver_at_ms=1, delay_ms=1)
    with pytest.raises(InvalidDeliveryTime):
        _decoded(wire.OutgoingMessage, {"body": "x", "deliver_at_ms": 1, "delay_ms": 1})


@pytest.mark.parametrize("fields", [{"max_messages": 0}, {"max_messages": wire.MAX_RECEIVE + 1},
                                    {"invisible_seconds": 0}, {"wait_seconds": wire.MAX_WAIT_SECONDS + 1}])
def test_a_receive_request_out_of_range_is_refused_where_built_and_where_decoded(fields: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        wire.ReceiveRequest(**fields)  # type: ignore[arg-type]
    with pytest.raises(msgspec.ValidationError):
        _decoded(wire.ReceiveRequest, fields)


@pytest.mark.parametrize(("shape", "fields"), [
    (wire.SendRequest, {"messages": []}),
    (wire.SendRequest, {"messages": [{"body": "x"}] * (wire.MAX_BATCH + 1)}),
    (wire.SendRequest, {"messages": [{"body": "x"}], "producer_id": -1}),
    (wire.SettleRequest, {"receipt_handles": ["h"] * (wire.MAX_RECEIVE + 1)}),
    (wire.HalfSendRequest, {"producer_group": "", "topic": "t", "message": {"body": "x"}}),
    (wire.HalfSendRequest, {"producer_group": "g", "topic": "t", "message": {"body": "x"},
                            "also": [{"topic": "t", "body": "x"}] * (wire.MAX_HALF_COMPANIONS + 1)}),
    (wire.EndRequest, {"producer_group": "g", "state": "maybe"}),
    (wire.EndItem, {"producer_group": "g", "state": "commit", "transaction_id": "t" * 256}),
    (wire.Heartbeat, {"producer_group": "g", "client_id": ""}),
    (wire.BeginTxnRequest, {"producer_id": 1, "epoch": -1, "sequence": 0}),
    (wire.TopicCreate, {"name": "t", "partitions": 2}),
])
def test_a_request_body_out_of_its_bounds_does_not_decode(shape: type[msgspec.Struct], fields: dict[str, Any]) -> None:
    with pytest.raises(msgspec.ValidationError):
        _decoded(shape, fields)


def test_a_message_group_conflict_is_an_invalid_request() -> None:
    with pytest.raises(InvalidRequest, match="queue_id"):
        _decoded(wire.OutgoingMessage, {"body": "x", "message_group": "g", "queue_id": 0})


def test_an_outgoing_message_leaves_its_defaults_off_the_wire() -> None:
    assert wire.to_wire(wire.OutgoingMessage(body="x", tag="t")) == {"body": "x", "tag": "t"}


def test_an_answer_that_does_not_fit_its_shape_is_a_value_error_naming_the_field() -> None:
    with pytest.raises(ValueError, match="queue_offset"):
        wire.decode({"status": "SEND_OK", "msg_id": "m", "topic": "t", "queue_id": 0, "queue_offset": "one",
                     "commit_log_offset": 0}, wire.SendResult)


def test_a_field_a_newer_broker_adds_to_an_answer_is_ignored_so_an_older_sdk_keeps_working() -> None:
    answer = {"status": "SEND_OK", "msg_id": "m", "topic": "T", "queue_id": 0, "queue_offset": 1,
              "commit_log_offset": 2, "replicas_acked": 2}
    assert wire.decode(answer, wire.SendResult).queue_offset == 1


def test_a_misspelt_field_in_a_request_the_sdk_builds_is_refused() -> None:
    with pytest.raises(ValueError):
        wire.decode({"body": "x", "tags": "t"}, wire.OutgoingMessage)


@pytest.mark.parametrize("fields", [
    {"message_group": ""}, {"message_group": "x" * 65}, {"message_group": "tab\t"},
    {"message_group": "g", "sharding_key": "other"}, {"message_group": "g", "queue_id": 0},
])
def test_a_message_group_the_broker_would_refuse_is_refused_where_the_message_is_built(fields: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        wire.OutgoingMessage(body="x", **fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(("fields", "error"), [
    ({"message_group": "tab\t"}, InvalidMessageGroup), ({"message_group": "g", "queue_id": 0}, InvalidRequest),
    ({"deliver_at_ms": 1, "delay_ms": 1}, InvalidDeliveryTime),
])
def test_a_message_refused_where_it_is_built_is_a_value_error_and_the_brokers_typed_error_at_once(
        fields: dict[str, object], error: type[BrokerError]) -> None:
    with pytest.raises(error) as refused:
        wire.OutgoingMessage(body="x", **fields)  # type: ignore[arg-type]
    assert isinstance(refused.value, ValueError)


def test_a_message_group_of_64_bytes_with_its_own_sharding_key_is_a_message() -> None:
    assert wire.OutgoingMessage(body="x", message_group="é" * 32, sharding_key="é" * 32).message_group == "é" * 32


@pytest.mark.parametrize(("expression", "tags"), [
    ("a || b", {"a", "b"}), (" a ||b|| a ", {"a", "b"}), (["a", "b"], {"a", "b"}), (("c",), {"c"}),
    ("*", None), ("", None), ([], None), (["a", "*"], None), (None, None)])
def test_a_tag_filter_is_rocketmqs_expression_or_a_list_and_star_or_nothing_is_every_message(expression: object,
                                                                                            tags: set[str] | None) -> None:
    assert subscription_tags(expression) == (None if tags is None else frozenset(tags))  # type: ignore[arg-type]


def test_a_tag_filter_past_its_bounds_is_refused() -> None:
    with pytest.raises(ValueError, match=f"at most {MAX_FILTER_TAGS} tags"):
        subscription_tags([f"t{i}" for i in range(MAX_FILTER_TAGS + 1)])
    with pytest.raises(ValueError, match="at most 255 characters"):
        subscription_tags("a || " + "x" * 256)
    with pytest.raises(ValueError):
        wire.ReceiveRequest(tags=["x" * 256])
