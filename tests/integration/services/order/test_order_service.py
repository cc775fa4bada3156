"""The order service as a real process against a real broker, on SQLite and PostgreSQL."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

import httpx
import orjson
import pytest

from tests.support.processes import BrokerProcess, ServiceProcess, free_port
from tests.support.report import report
from tests.support.waiting import wait_for

TOPIC = "ORDER_TOPIC"
FAST_CHECKS = {
    "HALFMQ_BROKER_TRANSACTION_TIMEOUT": "1",
    "HALFMQ_BROKER_TRANSACTION_CHECK_INTERVAL": "0.5",
}


@pytest.fixture
def broker(start_broker) -> BrokerProcess:
    return start_broker(FAST_CHECKS)


@pytest.fixture
def start_order(broker: BrokerProcess, database_url: str, tmp_path):
    started: list[ServiceProcess] = []

    def factory(**env: str) -> ServiceProcess:
        proc = ServiceProcess("order", tmp_path, {
            "ORDER_DATABASE_URL": database_url, "ORDER_BROKER_URL": broker.url, "ORDER_FAULTS_ENABLED": "true",
            "ORDER_HEARTBEAT_INTERVAL": "1", "ORDER_LOCAL_TX_TIMEOUT": "5", **env,
        })
        started.append(proc)
        return proc.start()

    yield factory
    for proc in started:
        proc.stop()


def visible_orders(broker: BrokerProcess) -> list[dict]:
    topic = httpx.get(f"{broker.url}/v1/topics/{TOPIC}")
    if topic.status_code == 404:
        return []
    out = []
    for q in topic.json()["queues"]:
        resp = httpx.get(f"{broker.url}/v1/topics/{TOPIC}/queues/{q['queue_id']}/messages", params={"max": 1000})
        out += [orjson.loads(m["body"]) for m in resp.json()["messages"]]
    return out


def place(order: ServiceProcess, user: str = "u1", amount: str = "12.50", **headers: str) -> httpx.Response:
    return httpx.post(f"{order.url}/orders", json={"user_id": user, "amount": amount}, headers=headers, timeout=30)



def test_a_normal_order_is_committed_and_visible_once(broker, start_order) -> None:
    order = start_order()
    resp = place(order)
    assert resp.status_code == 201, resp.text
    body = resp.json()
    assert body["message_state"] == "committed" and body["amount"] == "12.50"
    assert [m["order_id"] for m in visible_orders(broker)] == [body["order_id"]]
    assert visible_orders(broker)[0] == {"order_id": body["order_id"], "user_id": "u1", "amount": "12.50", "created_at": body["created_at"]}
    assert httpx.get(f"{order.url}/orders/{body['order_id']}").json()["user_id"] == "u1"


def test_fail_local_tx_leaves_no_order_and_no_visible_message(broker, start_order) -> None:
    order = start_order()
    resp = place(order, user="u-fail", **{"X-Fault": "fail-local-tx"})
    assert resp.status_code == 503 and resp.json()["code"] == "LOCAL_TRANSACTION_FAILED"
    assert httpx.get(f"{order.url}/orders", params={"user_id": "u-fail"}).json()["orders"] == []
    time.sleep(2.5)  # well past the broker's check time: nothing may surface later either
    assert visible_orders(broker) == []
    rolled = httpx.get(f"{broker.url}/v1/transactions", params={"state": "rolled_back"}).json()
    assert rolled["count"] == 1


def test_crash_after_commit_is_committed_by_check_back_after_restart(broker, start_order) -> None:
    order = start_order()
    with pytest.raises(httpx.HTTPError):
        place(order, user="u-crash", **{"X-Fault": "crash-after-commit"})
    assert order.wait_exit(30) == 86  # the process really exited between local commit and end
    order.start()
    [committed] = wait_for(lambda: visible_orders(broker), timeout=30)
    orders = httpx.get(f"{order.url}/orders", params={"user_id": "u-crash"}).json()["orders"]
    assert [o["order_id"] for o in orders] == [committed["order_id"]]
    time.sleep(1.5)
    assert len(visible_orders(broker)) == 1


def test_drop_end_answers_pending_check_and_is_committed_by_check_back(broker, start_order) -> None:
    order = start_order()
    resp = place(order, user="u-drop", **{"X-Fault": "drop-end"})
    assert resp.status_code == 201 and resp.json()["message_state"] == "pending_check"
    wait_for(lambda: [m["order_id"] for m in visible_orders(broker)] == [resp.json()["order_id"]])
    tx = httpx.get(f"{broker.url}/v1/transactions/{resp.json()['transaction_id']}").json()
    assert tx["state"] == "committed" and tx["check_times"] >= 1


def test_faults_are_refused_unless_enabled(broker, start_order) -> None:
    order = start_order(ORDER_FAULTS_ENABLED="false")
    resp = place(order, **{"X-Fault": "crash-after-commit"})
    assert resp.status_code == 403 and resp.json()["code"] == "FAULTS_DISABLED"
    assert order.alive and visible_orders(broker) == []


def test_unreachable_broker_means_no_order_and_a_503(start_order, database_url, tmp_path) -> None:
    order = start_order(ORDER_BROKER_URL=f"http://127.0.0.1:{free_port()}")
    resp = place(order, user="u-nobroker")
    assert resp.status_code == 503 and resp.json()["code"] == "BROKER_UNAVAILABLE"
    assert httpx.get(f"{order.url}/orders", params={"user_id": "u-nobroker"}).json()["orders"] == []


def test_idempotency_key_retry_returns_the_first_order(broker, start_order) -> None:
    order = start_order()
    first = place(order, user="u-idem", **{"Idempotency-Key": "k-1"})
    again = place(order, user="u-idem", **{"Idempotency-Key": "k-1"})
    assert first.status_code == 201 and again.status_code == 200
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.json()["order_id"] == first.json()["order_id"] and again.json()["message_state"] == "committed"
    other = place(order, user="u-idem", amount="99.00", **{"Idempotency-Key": "k-1"})
    assert other.status_code == 409 and other.json()["code"] == "IDEMPOTENCY_KEY_REUSED"
    assert len(visible_orders(broker)) == 1


def test_concurrent_retries_with_one_idempotency_key_create_one_order(broker, start_order) -> None:
    order = start_order()
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda _: place(order, user="u-race", **{"Idempotency-Key": "k-race"}), range(8)))
    assert all(a.status_code in (200, 201) for a in answers), [a.text for a in answers]
    assert len({a.json()["order_id"] for a in answers}) == 1
    assert len(httpx.get(f"{order.url}/orders", params={"user_id": "u-race"}).json()["orders"]) == 1
    time.sleep(2.5)
    assert len(visible_orders(broker)) == 1


@pytest.mark.parametrize("body", [
    {"user_id": "u1", "amount": "0"}, {"user_id": "u1", "amount": "1.234"}, {"user_id": "", "amount": "1"},
    {"user_id": "u1"}, {"user_id": "u1", "amount": "1", "extra": True}, {"user_id": "u1", "amount": -5},
])
def test_invalid_orders_are_refused_with_400_and_change_nothing(broker, start_order, body) -> None:
    order = start_order()
    resp = httpx.post(f"{order.url}/orders", json=body)
    assert resp.status_code == 400 and resp.json()["code"] == "INVALID_REQUEST"
    assert resp.headers["content-type"] == "application/problem+json"
    assert visible_orders(broker) == []


def test_a_full_width_amount_is_refused_with_400_and_changes_nothing(broker, start_order) -> None:
    order = start_order()
    resp = place(order, amount="\uff14\uff12.\uff11\uff10")
    assert (resp.status_code, resp.headers["content-type"], resp.json()["code"]) == (400, "application/problem+json", "INVALID_REQUEST")
    assert visible_orders(broker) == [] and httpx.get(f"{order.url}/orders", params={"user_id": "u1"}).json()["orders"] == []


def test_a_page_offset_past_the_database_integer_is_a_400_problem_not_a_500(start_order) -> None:
    order = start_order()
    assert place(order).status_code == 201
    resp = httpx.get(f"{order.url}/orders", params={"user_id": "u1", "offset": str(10**30)})
    assert (resp.status_code, resp.headers["content-type"], resp.json()["code"]) == (400, "application/problem+json", "INVALID_REQUEST")
    assert httpx.get(f"{order.url}/orders", params={"user_id": "u1", "offset": "0"}).json()["orders"] != []


def test_unknown_order_is_a_404_problem(start_order) -> None:
    resp = httpx.get(f"{start_order().url}/orders/nope")
    assert resp.status_code == 404 and resp.json()["code"] == "ORDER_NOT_FOUND"


def test_64_concurrent_orders_all_commit_exactly_once(broker, start_order) -> None:
    order = start_order()
    with ThreadPoolExecutor(64) as pool:
        answers = list(pool.map(lambda i: place(order, user=f"u{i % 8}", amount="1.00"), range(128)))
    assert [a.status_code for a in answers] == [201] * 128, [a.text for a in answers if a.status_code != 201][:3]
    ids = sorted(m["order_id"] for m in visible_orders(broker))
    assert ids == sorted(a.json()["order_id"] for a in answers)


def all_visible_order_ids(broker: BrokerProcess) -> list[str]:
    """Every ORDER_TOPIC message's order id, paging through each queue."""
    out: list[str] = []
    for q in httpx.get(f"{broker.url}/v1/topics/{TOPIC}").json()["queues"]:
        offset = q["min_offset"]
        while offset < q["max_offset"]:
            page = httpx.get(f"{broker.url}/v1/topics/{TOPIC}/queues/{q['queue_id']}/messages",
                             params={"offset": offset, "max": 256}).json()
            out += [orjson.loads(m["body"])["order_id"] for m in page["messages"]]
            offset = page["next_offset"]
    return out


def stored_order_ids(database_url: str) -> list[str]:
    from sqlalchemy import create_engine, text

    engine = create_engine(database_url)
    try:
        with engine.connect() as conn:
            return list(conn.scalars(text("SELECT order_id FROM orders")))
    finally:
        engine.dispose()


KILLS = 10
MIN_ORDERS = 2_100


def test_kill_9_of_the_order_service_under_load_leaves_every_order_visible_exactly_once(broker, start_order, database_url) -> None:
    """Orders keep coming while the service is killed -9 ten times; each stored order's message is visible once, no other."""
    order = start_order(ORDER_COMMIT_GRACE="1", ORDER_LOCAL_TX_TIMEOUT="2")
    placed: list[str] = []
    failed = [0]
    done = threading.Event()

    def load(worker: int) -> None:
        with httpx.Client(timeout=30) as client:
            while not done.is_set():
                try:
                    resp = client.post(f"{order.url}/orders", json={"user_id": f"u{worker}", "amount": "1.00"})
                except httpx.HTTPError:
                    failed[0] += 1  # killed mid-request, or down: the order may or may not exist
                    time.sleep(0.05)
                    continue
                if resp.status_code == 201:
                    placed.append(resp.json()["order_id"])
                else:
                    failed[0] += 1

    with ThreadPoolExecutor(16) as pool:
        for worker in range(16):
            pool.submit(load, worker)
        try:
            for _ in range(KILLS):
                time.sleep(1.5)
                order.kill9()
                order.start()
            wait_for(lambda: len(placed) >= MIN_ORDERS, timeout=240)
        finally:
            done.set()
    stored = set(stored_order_ids(database_url))
    # Orders whose end died with the process are committed by check-back from the barrier's records.
    wait_for(lambda: set(all_visible_order_ids(broker)) == stored, timeout=60)
    visible = all_visible_order_ids(broker)
    report(f"kill -9 x{KILLS}: {len(placed)} orders answered 201, {failed[0]} requests failed, "
           f"{len(stored)} orders stored, {len(visible)} messages visible")
    assert len(visible) == len(set(visible)) == len(stored), "every stored order's message once, no other"
    assert set(placed) <= stored
    assert len(placed) >= MIN_ORDERS


def test_an_unpaid_order_is_cancelled_when_its_payment_falls_due_and_a_paid_one_is_not(broker, start_order) -> None:
    order = start_order(ORDER_PAYMENT_DUE_SECONDS="4")
    paid, unpaid = (place(order, user="u-pay").json() for _ in range(2))
    assert httpx.post(f"{order.url}/orders/{paid['order_id']}/pay").json()["status"] == "paid"
    assert httpx.post(f"{order.url}/orders/{paid['order_id']}/pay").json()["status"] == "paid"  # paying again: the same answer
    assert httpx.get(f"{order.url}/orders/{unpaid['order_id']}").json()["status"] == "created"  # not before it falls due

    def payments() -> dict[str, dict]:
        return {p["order_id"]: p for p in httpx.get(f"{order.url}/payments", params={"user_id": "u-pay"}).json()["payments"]}

    wait_for(lambda: all(p["payment_due_seen_ms"] is not None for p in payments().values()), timeout=30)
    rows = payments()
    assert (rows[paid["order_id"]]["status"], rows[unpaid["order_id"]]["status"]) == ("paid", "cancelled")
    for row, placed in ((rows[paid["order_id"]], paid), (rows[unpaid["order_id"]], unpaid)):
        created_ms = datetime.fromisoformat(placed["created_at"]).timestamp() * 1000
        assert row["payment_due_ms"] >= created_ms + 4000  # due from the commit, which follows the order's creation
        assert row["payment_due_seen_ms"] >= row["payment_due_ms"]  # never delivered early
        # released by the broker's timer (the released message's store time) between falling due and arriving
        assert row["payment_due_ms"] <= row["payment_due_released_ms"] <= row["payment_due_seen_ms"]
    late = httpx.post(f"{order.url}/orders/{unpaid['order_id']}/pay")
    assert late.status_code == 409 and late.json()["code"] == "ORDER_CANCELLED"
    assert sorted(m["order_id"] for m in visible_orders(broker)) == sorted([paid["order_id"], unpaid["order_id"]])
