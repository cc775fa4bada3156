"""A request body decoded as its ``halfmq.wire`` struct; what does not fit is one problem shape, located in the body."""

import pytest

from halfmq.broker.api.body import decode_body
from halfmq.errors import InvalidMessageGroup, InvalidRequest, MalformedJson
from halfmq.wire import EndRequest, HalfSendRequest, ReceiveRequest, ResetOffsetsRequest, SendRequest


def _problem(raw: bytes, shape: type = EndRequest) -> InvalidRequest:
    with pytest.raises(InvalidRequest) as info:
        decode_body(raw, shape)
    return info.value


def test_a_body_that_fits_is_its_struct() -> None:
    assert decode_body(b'{"producer_group": "pg", "state": "commit"}', EndRequest) == EndRequest(
        producer_group="pg", state="commit")


def test_a_value_that_does_not_fit_is_an_invalid_request_located_in_the_body_in_msgspecs_words() -> None:
    problem = _problem(b'{"producer_group": "pg", "state": "maybe"}')
    assert type(problem) is InvalidRequest and problem.status == 400
    assert [e["loc"] for e in problem.to_problem()["errors"]] == [["body", "state"]]
    assert problem.detail == "body.state: Invalid enum value 'maybe'"


def test_a_missing_field_is_located_at_the_field_it_misses() -> None:
    problem = _problem(b'{"messages": [{"body": "fine"}, {"keys": ["k"]}]}', SendRequest)
    assert problem.to_problem()["errors"][0]["loc"] == ["body", "messages", "1", "body"]
    assert problem.detail == "body.messages.1.body: Object missing required field `body`"


def test_an_unknown_field_is_an_invalid_request() -> None:
    assert type(_problem(b'{"producer_group": "pg", "state": "commit", "delay_level": 3}')) is InvalidRequest


@pytest.mark.parametrize("raw", [b"", b'{"producer_group": ', b"\xff", b'{"producer_group": "\xff", "state": "commit"}',
                                 b'{"producer_group": "\\ud800", "state": "commit"}'])
def test_a_body_that_is_not_json_is_malformed_json(raw: bytes) -> None:
    assert type(_problem(raw)) is MalformedJson


def test_a_body_nested_deeper_than_a_parser_recurses_is_malformed_json_though_msgspec_stops_at_its_first_wrong_value() -> None:
    assert type(_problem(b'{"producer_group": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")) is MalformedJson


@pytest.mark.parametrize("number", [b"NaN", b"Infinity", b"-Infinity"])
def test_a_number_json_does_not_have_is_a_value_that_does_not_fit_as_it_always_was(number: bytes) -> None:
    """Python's parser (the fallback on the error path) takes these; the struct does not: INVALID_REQUEST, not MALFORMED_JSON."""
    problem = _problem(b'{"messages": [{"body": "x", "queue_id": %s}]}' % number, SendRequest)
    assert type(problem) is InvalidRequest
    assert problem.to_problem()["errors"][0]["loc"] == ["body", "messages", "0", "queue_id"]


def test_what_a_struct_refuses_with_its_own_code_keeps_the_code() -> None:
    raw = b'{"producer_group": "pg", "topic": "t", "message": {"body": "x", "message_group": "tab\\t"}}'
    assert isinstance(_problem(raw, HalfSendRequest), InvalidMessageGroup)


def test_a_number_or_a_boolean_sent_as_a_string_decodes_as_pydantic_took_it() -> None:
    body = decode_body(b'{"max_messages": "5", "invisible_seconds": "2.5", "wait_seconds": 1}', ReceiveRequest)
    assert body == ReceiveRequest(max_messages=5, invisible_seconds=2.5, wait_seconds=1.0)
    reset = decode_body(b'{"to": "offset", "offset": 7.0, "dry_run": "true", "force": 0}', ResetOffsetsRequest)
    assert (reset.offset, reset.dry_run, reset.force) == (7, True, False)


def test_a_string_that_is_no_number_is_still_an_invalid_request() -> None:
    problem = _problem(b'{"max_messages": "five"}', ReceiveRequest)
    assert problem.to_problem()["errors"][0]["loc"] == ["body", "max_messages"]
