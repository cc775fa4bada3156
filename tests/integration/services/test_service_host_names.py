"""DNS rebinding against the real order and credit services: only their own names are answered (issue 42).

A page on ``evil.example`` whose name now resolves to 127.0.0.1 makes the browser send ``Host: evil.example`` and,
being the page's own origin, a matching ``Origin``: no CORS check stops it. Before the gate the order service placed,
refunded and paid orders for it, and the credit service showed it a user's credits. Each service now refuses any
Host that is not one of its names (400 HOST_NOT_ALLOWED) before its routes, and stores nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.integration.broker.api.support import assert_problem
from tests.support.processes import BrokerProcess, ServiceProcess

REBOUND = {"host": "evil.example", "origin": "http://evil.example"}


def start_service(kind: str, broker: BrokerProcess, tmp_path: Path, **env: str) -> ServiceProcess:
    prefix = kind.upper()
    return ServiceProcess(kind, tmp_path, {f"{prefix}_DATABASE_URL": f"sqlite:///{tmp_path}/{kind}.db", f"{prefix}_BROKER_URL": broker.url,
                                           **{f"{prefix}_{name}": value for name, value in env.items()}}).start()


@pytest.fixture
def order(broker: BrokerProcess, tmp_path: Path) -> Iterator[ServiceProcess]:
    proc = start_service("order", broker, tmp_path, HEARTBEAT_INTERVAL="1")
    yield proc
    proc.stop()


@pytest.fixture
def credit(broker: BrokerProcess, tmp_path: Path) -> Iterator[ServiceProcess]:
    proc = start_service("credit", broker, tmp_path)
    yield proc
    proc.stop()


def place(order: ServiceProcess, user: str, **headers: str) -> httpx.Response:
    return httpx.post(f"{order.url}/orders", json={"user_id": user, "amount": "5.00"}, headers=headers, timeout=30)


def orders_of(order: ServiceProcess, user: str) -> list[dict]:
    return httpx.get(f"{order.url}/orders", params={"user_id": user}, timeout=10).json()["orders"]


def test_a_rebinding_page_can_neither_place_nor_refund_nor_pay_an_order(order: ServiceProcess) -> None:
    refused = assert_problem(place(order, "victim", **REBOUND), 400, "HOST_NOT_ALLOWED")
    assert "ORDER_ALLOWED_HOSTS" in refused["detail"]
    assert orders_of(order, "victim") == []

    placed = place(order, "victim")
    assert placed.status_code == 201, placed.text
    order_id = placed.json()["order_id"]
    for action in ("refund", "pay"):
        resp = httpx.post(f"{order.url}/orders/{order_id}/{action}", headers=REBOUND, timeout=30)
        assert_problem(resp, 400, "HOST_NOT_ALLOWED")
    [kept] = orders_of(order, "victim")
    assert kept["status"] == placed.json()["status"] and kept.get("paid_at") is None
    assert httpx.post(f"{order.url}/orders/{order_id}/refund", timeout=30).status_code == 201  # not refunded by the page


def test_a_rebinding_page_cannot_read_a_users_credits(credit: ServiceProcess) -> None:
    refused = assert_problem(httpx.get(f"{credit.url}/users/victim/credits", headers=REBOUND, timeout=10), 400, "HOST_NOT_ALLOWED")
    assert "CREDIT_ALLOWED_HOSTS" in refused["detail"]
    assert httpx.get(f"{credit.url}/users/victim/credits", timeout=10).status_code == 200


@pytest.mark.parametrize("kind", ["order", "credit"])
def test_the_loopback_names_and_the_compose_name_are_answered(kind: str, broker: BrokerProcess, tmp_path: Path) -> None:
    service = start_service(kind, broker, tmp_path)
    try:
        for host in ("localhost", "127.0.0.1", "[::1]", kind):  # `order` and `credit`: the compose stack's names
            assert httpx.get(f"{service.url}/healthz", headers={"host": f"{host}:{service.port}"}, timeout=10).status_code == 200, host
    finally:
        service.stop()


def test_names_listed_in_allowed_hosts_are_answered_and_others_still_refused(broker: BrokerProcess, tmp_path: Path) -> None:
    order = start_service("order", broker, tmp_path, ALLOWED_HOSTS="shop.internal, Orders.Example")
    try:
        assert place(order, "u1", host="shop.internal").status_code == 201
        assert httpx.get(f"{order.url}/healthz", headers={"host": "orders.example"}, timeout=10).status_code == 200
        assert_problem(place(order, "u2", **REBOUND), 400, "HOST_NOT_ALLOWED")
        assert_problem(httpx.get(f"{order.url}/healthz", headers={"host": "order"}, timeout=10), 400, "HOST_NOT_ALLOWED")  # a list replaces the default
    finally:
        order.stop()
