"""One mapping from pydantic's validation errors (path and query parameters, FastAPI's) to problems."""

from halfmq.broker.api.problems import as_broker_error, non_json_body, validation_problem
from halfmq.broker.store.flush_waiter import FlushTimedOut
from halfmq.broker.store.message_store import StoreNotWritable
from halfmq.errors import FlushDiskTimeout, MalformedJson, StoreUnavailable, UnsupportedMediaType


def test_fastapis_errors_keep_the_location_they_name() -> None:
    problem = validation_problem([{"loc": ("query", "limit"), "msg": "too big", "type": "less_than_equal"}])
    assert problem.to_problem()["errors"] == [{"loc": ["query", "limit"], "msg": "too big", "type": "less_than_equal"}]


def test_a_json_error_fastapi_reports_is_malformed_json() -> None:
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
