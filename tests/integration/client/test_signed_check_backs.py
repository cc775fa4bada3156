"""Check-backs signed by a broker with auth on, verified by the SDK's check app served for real."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from halfmq.broker.security.auth_file import AuthFile, derive_check_secret
from halfmq.client import LocalTransactionState, TransactionProducer
from halfmq.testing import ServedApp
from tests.integration.broker.api.support import assert_problem
from tests.support.auth import write_auth_file
from tests.support.processes import BrokerProcess
from tests.support.waiting import wait_for

GROUP = "order_producer_group"
FAST_CHECKS = {"HALFMQ_BROKER_TRANSACTION_TIMEOUT": "0.5", "HALFMQ_BROKER_TRANSACTION_CHECK_INTERVAL": "0.3"}


class Recorder:
    """Wraps an ASGI app and keeps each request's headers and body: what an eavesdropper could capture."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.requests: list[tuple[dict[str, str], bytes]] = []

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        body = b"".join(chunks)
        self.requests.append(({k.decode(): v.decode() for k, v in scope["headers"]}, body))
        sent = False

        async def replay() -> dict:
            nonlocal sent
            if sent:
                return {"type": "http.disconnect"}
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


class Listener:
    def __init__(self) -> None:
        self.checked = 0

    def execute_local_transaction(self, msg, arg) -> LocalTransactionState:
        return LocalTransactionState.UNKNOW  # leave it to the check-back

    def check_local_transaction(self, msg) -> LocalTransactionState:
        self.checked += 1
        return LocalTransactionState.COMMIT_MESSAGE


@pytest.fixture
def secured(start_broker, tmp_path: Path) -> tuple[BrokerProcess, dict[str, str], AuthFile]:
    auth, tokens = write_auth_file(tmp_path / "auth.json")
    broker = start_broker({**FAST_CHECKS, "HALFMQ_BROKER_AUTH_FILE": str(tmp_path / "auth.json")})
    return broker, tokens, auth


def test_a_signed_check_back_commits_and_replayed_tampered_or_unsigned_copies_are_refused(secured) -> None:
    broker, tokens, auth = secured
    listener = Listener()
    producer = TransactionProducer(broker.url, GROUP, listener, token=tokens["order"], heartbeat_interval=0.2)
    recorder = Recorder(producer.check_app(check_secret=derive_check_secret(auth.check_secret_key, GROUP)))
    server = ServedApp(recorder)
    producer.check_url = f"{server.url}/halfmq/check"
    with server, producer:
        result = producer.send_in_transaction("ORDER_TOPIC", "o-1", keys=["o-1"])
        wait_for(lambda: producer.get_transaction(result.transaction_id)["state"] == "committed", timeout=15.0, interval=0.05)
        assert listener.checked >= 1
        headers, body = recorder.requests[0]
        assert headers["x-halfmq-signature"].startswith("v1=")
        asked = listener.checked
        with httpx.Client(base_url=server.url) as http:
            copy = {k: headers[k] for k in ("content-type", "x-halfmq-timestamp", "x-halfmq-signature")}
            assert_problem(http.post("/halfmq/check", content=body, headers=copy), 401, "CHECK_SIGNATURE_INVALID")  # replay
            tampered = body.replace(b'"check_times":', b'"check_times":1') if b'"check_times":' in body else body + b" "
            assert_problem(http.post("/halfmq/check", content=tampered, headers=copy), 401, "CHECK_SIGNATURE_INVALID")
            assert_problem(http.post("/halfmq/check", content=body, headers={"content-type": "application/json"}),
                           401, "CHECK_SIGNATURE_INVALID")
            stale = {**copy, "x-halfmq-timestamp": str(int(headers["x-halfmq-timestamp"]) - 3600)}
            assert_problem(http.post("/halfmq/check", content=body, headers=stale), 401, "CHECK_SIGNATURE_INVALID")
        assert listener.checked == asked, "a refused request must not reach the listener"


def test_a_check_app_with_another_groups_secret_refuses_the_brokers_checks(secured) -> None:
    broker, tokens, auth = secured
    listener = Listener()
    producer = TransactionProducer(broker.url, GROUP, listener, token=tokens["order"], heartbeat_interval=0.2)
    recorder = Recorder(producer.check_app(check_secret=derive_check_secret(auth.check_secret_key, "another_group")))
    server = ServedApp(recorder)
    producer.check_url = f"{server.url}/halfmq/check"
    with server, producer:
        result = producer.send_in_transaction("ORDER_TOPIC", "o-2", keys=["o-2"])
        wait_for(lambda: len(recorder.requests) >= 2, timeout=15.0, interval=0.05)
        assert listener.checked == 0
        assert producer.get_transaction(result.transaction_id)["state"] == "pending"
