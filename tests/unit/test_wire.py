"""The SDK's msgspec spelling of the requests it sends matches the broker's pydantic one."""

from __future__ import annotations

import msgspec
import pydantic
import pytest

from halfmq import wire
from halfmq.broker import protocol
from halfmq.wire.messages import MAX_FILTER_TAGS, subscription_tags


def _struct_defaults(shape: type[msgspec.Struct]) -> dict[str, object]:
    info = msgspec.inspect.type_info(shape)
    assert isinstance(info, msgspec.inspect.StructType)
    return {f.name: (f.default if f.default is not msgspec.NODEFAULT else
                     f.default_factory() if f.default_factory is not msgspec.NODEFAULT else "required")
            for f in info.fields}


def _model_defaults(model: type[pydantic.BaseModel]) -> dict[str, object]:
    return {name: "required" if f.is_required() else f.get_default(call_default_factory=True)
            for name, f in model.model_fields.items()}


@pytest.mark.parametrize(("sdk", "broker"), [(wire.OutgoingMessage, protocol.OutgoingMessage),
                                             (wire.ReceiveRequest, protocol.ReceiveRequest)])
def test_the_sdk_and_the_broker_spell_a_request_with_the_same_fields_and_defaults(sdk: type[msgspec.Struct],
                                                                                 broker: type[pydantic.BaseModel]) -> None:
    assert _struct_defaults(sdk) == _model_defaults(broker)


@pytest.mark.parametrize("fields", [
    {"body": "x", "tag": "t" * (wire.MAX_TAG_LENGTH + 1)},
    {"body": "x", "queue_id": -1},
    {"body": "x", "body_encoding": "latin-1"},
])
def test_an_outgoing_message_the_broker_would_refuse_is_refused_where_it_is_built(fields: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        wire.OutgoingMessage(**fields)  # type: ignore[arg-type]
    with pytest.raises(pydantic.ValidationError):
        protocol.OutgoingMessage(**fields)  # type: ignore[arg-type]


EMOJI = "\N{GRINNING FACE}"  # one character, four bytes of UTF-8


def test_a_tag_and_a_nack_reason_are_limited_in_characters_on_both_sides_and_say_so() -> None:
    """Labels a person reads: 255 and 256 characters, so at most 1,020 and 1,024 bytes of UTF-8 (the broker counts the tag's
    bytes again toward MAX_PROPERTIES_BYTES). Multi-byte text up to the count passes; one character more does not."""
    assert wire.OutgoingMessage(body="x", tag=EMOJI * wire.MAX_TAG_LENGTH).tag == protocol.OutgoingMessage(
        body="x", tag=EMOJI * wire.MAX_TAG_LENGTH).tag
    with pytest.raises(ValueError, match="characters"):
        wire.OutgoingMessage(body="x", tag=EMOJI * (wire.MAX_TAG_LENGTH + 1))
    with pytest.raises(pydantic.ValidationError):
        protocol.OutgoingMessage(body="x", tag=EMOJI * (wire.MAX_TAG_LENGTH + 1))
    assert protocol.NackRequest(receipt_handles=["h"], reason=EMOJI * wire.MAX_NACK_REASON).reason == EMOJI * wire.MAX_NACK_REASON
    with pytest.raises(pydantic.ValidationError):
        protocol.NackRequest(receipt_handles=["h"], reason=EMOJI * (wire.MAX_NACK_REASON + 1))


def test_a_message_group_is_limited_in_utf8_bytes() -> None:
    assert wire.OutgoingMessage(body="x", message_group=EMOJI * 16).message_group == EMOJI * 16  # 64 bytes
    with pytest.raises(ValueError, match="bytes"):
        wire.OutgoingMessage(body="x", message_group=EMOJI * 16 + "x")  # 17 characters, 65 bytes


@pytest.mark.parametrize("fields", [{"max_messages": 0}, {"max_messages": wire.MAX_RECEIVE + 1},
                                    {"invisible_seconds": 0}, {"wait_seconds": wire.MAX_WAIT_SECONDS + 1}])
def test_a_receive_request_out_of_range_is_refused_on_both_sides(fields: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        wire.ReceiveRequest(**fields)  # type: ignore[arg-type]
    with pytest.raises(pydantic.ValidationError):
        protocol.ReceiveRequest(**fields)


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
