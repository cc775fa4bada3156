"""A failed `halfmq admin` call is one line that says what to do: the broker unreachable, the token missing or refused."""

from __future__ import annotations

import argparse

import httpx
import orjson
import pytest

from cli.admin.calls import call, refusal, unreachable
from halfmq.client.transport import error_from_answer


def test_an_unreachable_broker_is_one_line_that_names_the_url_and_how_to_point_elsewhere() -> None:
    line = unreachable("http://127.0.0.1:10911", httpx.ConnectError("[Errno 111] Connection refused"))
    assert "\n" not in line and "http://127.0.0.1:10911" in line and "Connection refused" in line
    assert "--broker" in line and "$HALFMQ_URL" in line and "halfmq up" in line


def _refused(status: int, body: bytes) -> str:
    """The line for the typed error the SDK's transport makes of this answer."""
    return refusal(error_from_answer(status, body, "GET http://127.0.0.1:10911/v1/topics"))


def test_a_missing_token_says_to_pass_one_and_a_forbidden_one_says_whose_token_to_use() -> None:
    missing = _refused(401, orjson.dumps({"code": "UNAUTHENTICATED", "detail": "no bearer token"}))
    assert missing.startswith("broker refused: UNAUTHENTICATED: no bearer token") and "--token" in missing
    assert "$HALFMQ_TOKEN" in missing
    assert "admin token" in _refused(403, orjson.dumps({"code": "ACCESS_DENIED", "title": "denied"}))
    # (an answer that is not problem+json, e.g. a proxy's page, says which node's it was)
    assert _refused(502, b"<html>bad gateway</html>") == "broker refused: HTTP 502 from GET http://127.0.0.1:10911/v1/topics: <html>bad gateway</html>"


def test_a_call_to_a_port_nobody_listens_on_exits_with_that_line_and_no_traceback() -> None:
    args = argparse.Namespace(broker="http://127.0.0.1:1", token="t")
    with pytest.raises(SystemExit) as exit_:
        call(args, lambda admin, _: admin.list_groups())
    assert str(exit_.value.code).startswith("cannot reach the broker at http://127.0.0.1:1 (")
