"""TLS with a throwaway CA made in the test: the broker and the order service serve HTTPS, the SDK verifies."""

from __future__ import annotations

import asyncio
import ssl

import httpx
import pytest

from halfmq.cli.credentials import ensure_credentials
from halfmq.client import AsyncProducer, BrokerError, Producer
from tests.conftest import TEST_BROKER_ENV
from tests.support.processes import BrokerProcess, ServiceProcess, free_port
from tests.support.tls import TlsFiles, make_ca_and_server_cert
from tests.support.waiting import wait_for


@pytest.fixture
def tls(tmp_path) -> TlsFiles:
    return make_ca_and_server_cert(tmp_path / "tls")


@pytest.fixture
def tls_broker(tmp_path, tls: TlsFiles):
    creds, _ = ensure_credentials(tmp_path / "auth")
    env = {**TEST_BROKER_ENV, "HALFMQ_BROKER_AUTH_FILE": str(creds.auth_file), "HALFMQ_BROKER_TLS_CERT_FILE": str(tls.cert),
           "HALFMQ_BROKER_TLS_KEY_FILE": str(tls.key), "HALFMQ_BROKER_CHECK_CA_FILE": str(tls.ca),
           "HALFMQ_BROKER_TRANSACTION_TIMEOUT": "1", "HALFMQ_BROKER_TRANSACTION_CHECK_INTERVAL": "0.5"}
    broker = BrokerProcess(tmp_path / "data", tmp_path, env, ca_file=tls.ca).start()
    yield broker, creds
    broker.stop()


def test_the_sdk_talks_https_to_a_broker_whose_ca_it_is_given_and_refuses_it_otherwise(tls_broker, tls: TlsFiles) -> None:
    broker, creds = tls_broker
    assert broker.url.startswith("https://")
    with Producer(broker.url, token=creds.token("order"), verify=str(tls.ca)) as producer:
        assert producer.send("ORDER_TOPIC", "over tls").status == "SEND_OK"
    with Producer(broker.url, token=creds.token("order"), retries=0) as trusting_nobody_extra:
        with pytest.raises(BrokerError, match=r"cannot reach the broker at https://\S+ \(certificate not trusted: .*HALFMQ_CA_FILE\)$"):
            trusting_nobody_extra.send("ORDER_TOPIC", "unverified")

    async def send_async(verify: str | None) -> str:
        async with AsyncProducer(broker.url, token=creds.token("order"), verify=verify, retries=0) as producer:
            return (await producer.send("ORDER_TOPIC", "async over tls")).status

    assert asyncio.run(send_async(str(tls.ca))) == "SEND_OK"
    with pytest.raises(BrokerError, match="(?i)certificate"):
        asyncio.run(send_async(None))
    with pytest.raises(httpx.ConnectError):  # a client that trusts only the system's CAs
        httpx.get(f"{broker.url}/healthz")


def test_the_order_service_serves_https_and_its_check_backs_go_over_tls(tls_broker, tls: TlsFiles, tmp_path) -> None:
    broker, creds = tls_broker
    port = free_port()
    order = ServiceProcess("order", tmp_path, {
        "ORDER_DATABASE_URL": f"sqlite:///{tmp_path}/order.db", "ORDER_BROKER_URL": broker.url, "ORDER_FAULTS_ENABLED": "true",
        "ORDER_PUBLIC_URL": f"https://127.0.0.1:{port}", "ORDER_HEARTBEAT_INTERVAL": "1", "ORDER_LOCAL_TX_TIMEOUT": "5",
        "ORDER_BROKER_TOKEN_FILE": str(creds.token_file("order")), "ORDER_CHECK_SECRET_FILE": str(creds.order_check_secret_file),
        "ORDER_BROKER_CA_FILE": str(tls.ca), "ORDER_TLS_CERT_FILE": str(tls.cert), "ORDER_TLS_KEY_FILE": str(tls.key),
    }, port=port, ca_file=tls.ca).start()
    try:
        with httpx.Client(verify=ssl.create_default_context(cafile=tls.ca), timeout=30) as http:
            placed = http.post(f"{order.url}/orders", json={"user_id": "u1", "amount": "2"}, headers={"X-Fault": "drop-end"})
            assert placed.status_code == 201 and placed.json()["message_state"] == "pending_check", placed.text
            admin = {"authorization": f"Bearer {creds.token('admin')}"}
            txid = placed.json()["transaction_id"]
            wait_for(lambda: http.get(f"{broker.url}/v1/transactions/{txid}", headers=admin).json()["state"] == "committed", timeout=30)
    finally:
        order.stop()
