"""One mapping from pydantic's validation errors to problems, for hot routes and FastAPI's alike."""

import pytest
from pydantic import ValidationError

from halfmq.broker.api.problems import as_broker_error, non_json_body, validation_problem
from halfmq.broker.protocol import EndRequest
from halfmq.broker.store.flush_waiter import FlushTimedOut
from halfmq.broker.store.message_store import StoreNotWritable
from halfmq.errors import FlushDiskTimeout, InvalidRequest, MalformedJson, StoreUnavailable, UnsupportedMediaType


def _errors(raw: bytes) -> list:
    with pytest.raises(ValidationError) as info:
        EndRequest.model_validate_json(raw)
    return info.value.errors(include_url=False, include_input=False)


def test_a_hot_routes_body_errors_are_located_in_the_body() -> None:
    problem = validation_problem(_errors(b'{"producer_group": "pg", "state": "maybe"}'), where=("body",))
    assert type(problem) is InvalidRequest and problem.status == 400
    assert [e["loc"] for e in problem.to_problem()["errors"]] == [["body", "state"]]
    assert problem.detail.startswith("body.state: ")


def test_fastapis_errors_keep_the_location_they_name() -> None:
    problem = validation_problem([{"loc": ("query", "limit"), "msg": "too big", "type": "less_than_equal"}])
    assert problem.to_problem()["errors"] == [{"loc": ["query", "limit"], "msg": "too big", "type": "less_than_equal"}]


def test_a_body_that_is_not_json_is_malformed_json_whichever_route_read_it() -> None:
    assert isinstance(validation_problem(_errors(b'{"producer_group": '), where=("body",)), MalformedJson)
    assert isinstance(validation_problem([{"loc": ("body", 0), "msg": "JSON decode error", "type": "json_invalid"}]), MalformedJson)


def test_only_a_json_content_type_is_read_as_json() -> None:
    assert non_json_body("application/json; charset=utf-8") is None
    assert isinstance(non_json_body("text/plain"), UnsupportedMediaType)
    assert "no content type" in non_json_body("").detail


def test_the_stores_durability_errors_are_answered_as_before_the_waiter_moved_into_the_store() -> None:
    timed_out = as_broker_error(FlushTimedOut("fsync did not complete within 5s"))
    assert isinstance(timed_out, FlushDiskTimeout) and timed_out.to_problem()["code"] == "FLUSH_DISK_TIMEOUT"
    assert timed_out.status == 503 and timed_out.retriable and timed_out.detail == "fsync did not complete within 5s"
    failed = as_broker_error(StoreNotWritable("fsync failed: EIO"))
    assert isinstance(failed, StoreUnavailable) and failed.to_problem()["code"] == "STORE_UNAVAILABLE"
    assert failed.detail == "fsync failed: EIO"
