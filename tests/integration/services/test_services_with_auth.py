"""Order and credit services against a broker with auth on, each with its own token; signed check-backs only."""

from __future__ import annotations

import time

import httpx
import orjson
import pytest

from halfmq.cli.credentials import ensure_credentials
from tests.integration.broker.api.support import assert_problem
from tests.support.processes import ServiceProcess
from tests.support.waiting import wait_for

FAST_CHECKS = {"HALFMQ_BROKER_TRANSACTION_TIMEOUT": "1", "HALFMQ_BROKER_TRANSACTION_CHECK_INTERVAL": "0.5"}


@pytest.fixture
def stack(start_broker, tmp_path):
    creds, made = ensure_credentials(tmp_path / "auth")
    assert made and ensure_credentials(tmp_path / "auth") == (creds, False)  # made once, then reused
    broker = start_broker({**FAST_CHECKS, "HALFMQ_BROKER_AUTH_FILE": str(creds.auth_file)})
    order = ServiceProcess("order", tmp_path, {
        "ORDER_DATABASE_URL": f"sqlite:///{tmp_path}/order.db", "ORDER_BROKER_URL": broker.url, "ORDER_FAULTS_ENABLED": "true",
        "ORDER_HEARTBEAT_INTERVAL": "1", "ORDER_LOCAL_TX_TIMEOUT": "5",
        "ORDER_BROKER_TOKEN_FILE": str(creds.token_file("order")), "ORDER_CHECK_SECRET_FILE": str(creds.order_check_secret_file),
    })
    credit = ServiceProcess("credit", tmp_path, {
        "CREDIT_DATABASE_URL": f"sqlite:///{tmp_path}/credit.db", "CREDIT_BROKER_URL": broker.url, "CREDIT_WAIT_SECONDS": "1",
        "CREDIT_BROKER_TOKEN_FILE": str(creds.token_file("credit")),
    })
    order.start(), credit.start()
    yield broker, order, credit, creds
    credit.stop(), order.stop()


def balance(credit: ServiceProcess, user: str) -> int:
    return httpx.get(f"{credit.url}/users/{user}/credits").json()["balance"]


def test_orders_flow_to_credits_with_each_service_on_its_own_token(stack) -> None:
    broker, order, credit, creds = stack
    placed = httpx.post(f"{order.url}/orders", json={"user_id": "u1", "amount": "12.50"}, timeout=30)
    assert placed.status_code == 201 and placed.json()["message_state"] == "committed", placed.text
    dropped = httpx.post(f"{order.url}/orders", json={"user_id": "u1", "amount": "5"}, headers={"X-Fault": "drop-end"}, timeout=30)
    assert dropped.status_code == 201 and dropped.json()["message_state"] == "pending_check"
    wait_for(lambda: balance(credit, "u1") == 17, timeout=30)  # the dropped end was committed by a signed check-back
    admin = {"authorization": f"Bearer {creds.token('admin')}"}
    tx = httpx.get(f"{broker.url}/v1/transactions/{dropped.json()['transaction_id']}", headers=admin).json()
    assert tx["state"] == "committed" and tx["check_times"] >= 1


def test_the_order_services_check_endpoint_is_no_open_oracle(stack) -> None:
    _, order, _, _ = stack
    placed = httpx.post(f"{order.url}/orders", json={"user_id": "u2", "amount": "3"}, timeout=30).json()
    probe = {"transaction_id": placed["transaction_id"], "producer_group": "order_producer_group", "check_times": 1,
             "message": {"topic": "ORDER_TOPIC", "body": orjson.dumps({"order_id": placed["order_id"]}).decode(),
                         "msg_id": "x", "queue_id": 0, "queue_offset": 0, "commit_log_offset": 0,
                         "born_timestamp": 0, "store_timestamp": 0, "properties": {}}}
    resp = httpx.post(f"{order.url}/halfmq/check", json=probe)
    assert_problem(resp, 401, "CHECK_SIGNATURE_INVALID")
    assert "state" not in resp.json()


@pytest.mark.parametrize("signature", ["v1=\u00e9" + "0" * 63, "v1=\u00ff\u00fe"])
def test_a_signature_header_outside_ascii_is_a_401_not_a_500(stack, signature: str) -> None:
    _, order, _, _ = stack
    body = orjson.dumps({"transaction_id": "t1", "producer_group": "order_producer_group", "check_times": 1, "message": {}})
    resp = httpx.post(f"{order.url}/halfmq/check", content=body, headers={
        "content-type": "application/json", "x-halfmq-timestamp": str(int(time.time())),
        "x-halfmq-signature": signature.encode("latin-1")})  # the raw bytes an attacker sends
    assert_problem(resp, 401, "CHECK_SIGNATURE_INVALID")


def test_a_forged_order_straight_to_the_broker_credits_nothing(stack) -> None:
    broker, _, credit, creds = stack
    forged = {"messages": [{"body": orjson.dumps({"order_id": "forged-1", "user_id": "mallory", "amount": "999999999"}).decode()}]}
    assert httpx.post(f"{broker.url}/v1/topics/ORDER_TOPIC/messages", json=forged).status_code == 401
    credit_token = {"authorization": f"Bearer {creds.token('credit')}"}
    assert httpx.post(f"{broker.url}/v1/topics/ORDER_TOPIC/messages", json=forged, headers=credit_token).status_code == 403
    assert balance(credit, "mallory") == 0
