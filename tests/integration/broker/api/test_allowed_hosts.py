"""DNS rebinding against a real loopback broker with auth off: only the broker's own names are answered.

A page on ``evil.example`` whose name now resolves to 127.0.0.1 makes the browser
send ``Host: evil.example``; the broker refuses every such request (400
HOST_NOT_ALLOWED) before any route, the console's included, so the page can
neither read the console (and its CSRF token) nor act. The console's answers
also forbid framing.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.integration.broker.http_helpers import path

from .support import ModuleBrokerFactory, assert_problem, stores_nothing

EVIL = {"host": "evil.example"}


@pytest.fixture(scope="module")
def broker_port(module_broker_factory: ModuleBrokerFactory) -> int:
    return module_broker_factory().port


@pytest.fixture(scope="module")
def client(broker_port: int) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=f"http://127.0.0.1:{broker_port}", timeout=15) as c:
        yield c


@pytest.mark.parametrize(("method", "where"), [
    ("GET", "/console/transactions"), ("GET", "/console/transactions/fragment"), ("GET", "/console/login"),
    ("GET", "/v1/topics"), ("GET", "/healthz"), ("GET", "/metrics"), ("GET", "/openapi.json"),
    ("POST", "/v1/topics/REBOUND/messages"),  # a hot route
    ("POST", "/v1/transactional-ids/rebound/init"),
])
@pytest.mark.parametrize("host", ["evil.example", "evil.example:10911", "localhost.evil.example"])
def test_a_request_naming_another_host_is_refused_before_any_route(client: httpx.Client, method: str, where: str, host: str) -> None:
    with stores_nothing(client):
        resp = client.request(method, where, headers={"host": host}, json={"messages": [{"body": "x"}]} if method == "POST" else None)
        body = assert_problem(resp, 400, "HOST_NOT_ALLOWED")
    assert "HALFMQ_BROKER_ALLOWED_HOSTS" in body["detail"]
    assert "X-CSRF-Token" not in resp.text


def test_a_rebinding_page_cannot_force_a_commit_even_with_a_scraped_csrf_token(client: httpx.Client) -> None:
    client.post("/v1/topics", json={"name": "ORDERS", "queues": 1}).raise_for_status()
    txid = client.post("/v1/transactions", json={"producer_group": "pg", "topic": "ORDERS", "message": {"body": "x"}}).json()["transaction_id"]
    page = client.get("/console/transactions").text
    csrf = page.split('"X-CSRF-Token": "')[1].split('"')[0]
    refused = client.post(path("console", "transactions", txid, "commit"), headers={**EVIL, "x-csrf-token": csrf})
    assert_problem(refused, 400, "HOST_NOT_ALLOWED")
    assert client.get(f"/v1/transactions/{txid}").json()["state"] == "pending"


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", "[::1]", "LOCALHOST."])
def test_the_loopback_names_with_or_without_the_port_are_answered(client: httpx.Client, broker_port: int, host: str) -> None:
    for header in (host, f"{host}:{broker_port}"):
        assert client.get("/v1/topics", headers={"host": header}).status_code == 200, header


def test_the_console_answers_forbid_framing(client: httpx.Client) -> None:
    for resp in (client.get("/console/transactions"), client.get("/console/transactions/fragment"), client.get("/console/login"),
                 client.get("/console", follow_redirects=False), client.post("/console/transactions/x/commit")):
        assert resp.headers["content-security-policy"] == "frame-ancestors 'none'", resp.request.url
        assert resp.headers["x-frame-options"] == "DENY", resp.request.url


def test_names_listed_in_allowed_hosts_are_answered_and_others_still_refused(module_broker_factory: ModuleBrokerFactory) -> None:
    broker = module_broker_factory({"HALFMQ_BROKER_ALLOWED_HOSTS": "broker.internal, Queue.Example"})
    with httpx.Client(base_url=broker.url, timeout=15) as c:
        assert c.get("/v1/topics", headers={"host": f"broker.internal:{broker.port}"}).status_code == 200
        assert c.get("/console/transactions", headers={"host": "queue.example"}).status_code == 200
        assert_problem(c.get("/v1/topics", headers=EVIL), 400, "HOST_NOT_ALLOWED")
