"""A failed `halfmq admin` call is one line that says what to do: the broker unreachable, the token missing or refused."""

from __future__ import annotations

import httpx
import orjson
import pytest

from cli.admin.broker_api import BrokerApi, refusal, unreachable


def test_an_unreachable_broker_is_one_line_that_names_the_url_and_how_to_point_elsewhere() -> None:
    line = unreachable("http://127.0.0.1:10911", httpx.ConnectError("[Errno 111] Connection refused"))
    assert "\n" not in line and "http://127.0.0.1:10911" in line and "Connection refused" in line
    assert "--broker" in line and "$HALFMQ_URL" in line and "halfmq up" in line


def test_a_missing_token_says_to_pass_one_and_a_forbidden_one_says_whose_token_to_use() -> None:
    missing = refusal(401, orjson.dumps({"code": "UNAUTHENTICATED", "detail": "no bearer token"}))
    assert missing.startswith("broker refused: UNAUTHENTICATED: no bearer token") and "--token" in missing
    assert "$HALFMQ_TOKEN" in missing
    assert "admin token" in refusal(403, orjson.dumps({"code": "ACCESS_DENIED", "title": "denied"}))
    assert refusal(502, b"<html>bad gateway</html>") == "broker refused: HTTP 502: <html>bad gateway</html>"


def test_a_call_to_a_port_nobody_listens_on_exits_with_that_line_and_no_traceback() -> None:
    api = BrokerApi("http://127.0.0.1:1", timeout=2)
    with pytest.raises(SystemExit) as exit_:
        api.get("/v1/consumer-groups")
    assert str(exit_.value.code).startswith("cannot reach the broker at http://127.0.0.1:1 (")
