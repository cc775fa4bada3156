"""Refunds through the real order service, broker and credit service: each refund goes to its order's message group
(the user's), so the credit service applies it after its order, and every user's messages in the order sent."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx
import orjson
import pytest

from halfmq.cli.demo.guarantees import Entry, credits_in_order
from tests.support.processes import BrokerProcess, ServiceProcess
from tests.support.waiting import wait_for

TOPIC = "ORDER_TOPIC"
FAST_CHECKS = {"HALFMQ_BROKER_TRANSACTION_TIMEOUT": "1", "HALFMQ_BROKER_TRANSACTION_CHECK_INTERVAL": "0.5"}
USERS, ORDERS_EACH = 4, 6


@pytest.fixture
def broker(start_broker) -> BrokerProcess:
    b = start_broker(FAST_CHECKS)
    # Several queues: a refund in another queue than its order could be handed out first.
    httpx.post(f"{b.url}/v1/topics", json={"name": TOPIC, "queues": 4}).raise_for_status()
    return b


@pytest.fixture
def order(broker: BrokerProcess, tmp_path):
    proc = ServiceProcess("order", tmp_path, {
        "ORDER_DATABASE_URL": f"sqlite:///{tmp_path}/order.db", "ORDER_BROKER_URL": broker.url, "ORDER_FAULTS_ENABLED": "true",
        "ORDER_HEARTBEAT_INTERVAL": "1", "ORDER_LOCAL_TX_TIMEOUT": "5",
    })
    yield proc.start()
    proc.stop()


@pytest.fixture
def start_credit(broker: BrokerProcess, database_url: str, tmp_path):
    started: list[ServiceProcess] = []

    def factory() -> ServiceProcess:
        proc = ServiceProcess("credit", tmp_path, {
            "CREDIT_DATABASE_URL": database_url, "CREDIT_BROKER_URL": broker.url, "CREDIT_INVISIBLE_SECONDS": "5",
            "CREDIT_WAIT_SECONDS": "1",
        })
        started.append(proc)
        return proc.start()

    yield factory
    for proc in started:
        proc.stop()


def place(order: ServiceProcess, user: str, amount: str = "10.00", **headers: str) -> dict:
    resp = httpx.post(f"{order.url}/orders", json={"user_id": user, "amount": amount}, headers=headers, timeout=30)
    assert resp.status_code == 201, resp.text
    return resp.json()


def refund(order: ServiceProcess, order_id: str) -> httpx.Response:
    return httpx.post(f"{order.url}/orders/{order_id}/refund", timeout=30)


def sent_per_user(broker: BrokerProcess) -> tuple[dict[str, list[Entry]], dict[str, set[int]]]:
    """Each user's messages on the topic in queue order, and the queues each user's messages are in."""
    sent: dict[str, list[Entry]] = {}
    queues: dict[str, set[int]] = {}
    for q in httpx.get(f"{broker.url}/v1/topics/{TOPIC}").json()["queues"]:
        page = httpx.get(f"{broker.url}/v1/topics/{TOPIC}/queues/{q['queue_id']}/messages", params={"max": 1000}).json()
        for m in page["messages"]:
            body = orjson.loads(m["body"])
            sent.setdefault(body["user_id"], []).append((body["order_id"], body.get("kind", "order")))
            queues.setdefault(body["user_id"], set()).add(q["queue_id"])
    return sent, queues


def applied_per_user(credit: ServiceProcess, users: list[str]) -> dict[str, list[Entry]]:
    ledgers = {user: httpx.get(f"{credit.url}/users/{user}/ledger", params={"limit": 1000}).json()["entries"] for user in users}
    return {user: [(e["order_id"], e["kind"]) for e in entries] for user, entries in ledgers.items()}


def test_a_refund_is_credited_after_its_order(broker, order, start_credit) -> None:
    users = [f"u{i}" for i in range(USERS)]

    def orders_and_refunds_of(user: str) -> list[str]:
        refunded = []
        for i in range(ORDERS_EACH):
            placed = place(order, user, f"{10 + i}.00")
            if i % 2 == 0:  # refunded at once, while nothing is credited yet
                assert refund(order, placed["order_id"]).status_code == 201
                refunded.append(placed["order_id"])
        return refunded

    with ThreadPoolExecutor(USERS) as pool:
        refunded = [oid for oids in pool.map(orders_and_refunds_of, users) for oid in oids]
    credits = [start_credit(), start_credit()]  # two consumers of the same backlog
    total = USERS * ORDERS_EACH + len(refunded)
    wait_for(lambda: sum(len(entries) for entries in applied_per_user(credits[0], users).values()) == total, timeout=60)

    sent, queues = sent_per_user(broker)
    check = credits_in_order(sent, applied_per_user(credits[0], users))
    assert check.ok, check.detail
    assert check.detail == f"{total} credits of {USERS} users in send order; {len(refunded)} refunds after their orders"
    assert all(len(queues[user]) == 1 for user in users), queues  # a message group keeps one queue
    # Each user keeps the odd orders' points: 11 + 13 + 15.
    assert [httpx.get(f"{credits[1].url}/users/{user}/credits").json()["balance"] for user in users] == [39] * USERS


def test_a_refund_is_refused_until_its_order_is_sent_and_then_only_once(broker, order, start_credit) -> None:
    credit = start_credit()
    pending = place(order, "u-drop", "5.00", **{"X-Fault": "drop-end"})
    assert pending["message_state"] == "pending_check"
    early = refund(order, pending["order_id"])  # the check-back has not committed the order's message yet
    assert (early.status_code, early.json()["code"]) == (409, "ORDER_NOT_SENT")
    first = wait_for(lambda: (resp := refund(order, pending["order_id"])).status_code == 201 and resp, timeout=30)
    assert first.json()["status"] == "refunded"
    again = refund(order, pending["order_id"])
    assert (again.status_code, again.json()["code"]) == (409, "ORDER_ALREADY_REFUNDED")
    assert httpx.get(f"{order.url}/orders/{pending['order_id']}").json()["status"] == "refunded"
    missing = refund(order, "no-such-order")
    assert (missing.status_code, missing.json()["code"]) == (404, "ORDER_NOT_FOUND")
    wait_for(lambda: [(e["kind"], e["points"]) for e in applied_entries(credit, "u-drop")] == [("order", 5), ("refund", -5)], timeout=30)


def applied_entries(credit: ServiceProcess, user: str) -> list[dict]:
    return httpx.get(f"{credit.url}/users/{user}/ledger").json()["entries"]
