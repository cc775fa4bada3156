"""The credit service as a real process, consuming from a real broker, on SQLite and PostgreSQL."""

from __future__ import annotations

import time
import uuid

import httpx
import orjson
import pytest

from tests.support.processes import BrokerProcess, ServiceProcess
from tests.support.waiting import wait_for

TOPIC = "ORDER_TOPIC"


@pytest.fixture
def broker(start_broker) -> BrokerProcess:
    b = start_broker({"HALFMQ_BROKER_RETRY_DELAYS": "0.2", "HALFMQ_BROKER_MAX_RECONSUME_TIMES": "2"})
    httpx.post(f"{b.url}/v1/topics", json={"name": TOPIC, "queues": 4}).raise_for_status()
    return b


@pytest.fixture
def start_credit(broker: BrokerProcess, database_url: str, tmp_path):
    started: list[ServiceProcess] = []

    def factory(**env: str) -> ServiceProcess:
        proc = ServiceProcess("credit", tmp_path, {
            "CREDIT_DATABASE_URL": database_url, "CREDIT_BROKER_URL": broker.url,
            "CREDIT_INVISIBLE_SECONDS": "2", "CREDIT_WAIT_SECONDS": "1", **env,
        })
        started.append(proc)
        return proc.start()

    yield factory
    for proc in started:
        proc.stop()


def order_message(order_id: str, user_id: str = "u1", amount: str = "10.00") -> dict:
    body = {"order_id": order_id, "user_id": user_id, "amount": amount, "created_at": "2026-11-22T00:00:00+00:00"}
    return {"body": orjson.dumps(body).decode(), "keys": [order_id]}


def send(broker: BrokerProcess, *messages: dict) -> None:
    httpx.post(f"{broker.url}/v1/topics/{TOPIC}/messages", json={"messages": list(messages)}).raise_for_status()


def balance(credit: ServiceProcess, user_id: str) -> dict:
    return httpx.get(f"{credit.url}/users/{user_id}/credits").json()



def test_each_order_message_credits_its_user_once(broker, start_credit) -> None:
    credit = start_credit()
    send(broker, *[order_message(f"o{i}", f"u{i % 3}", "10.99") for i in range(30)])
    wait_for(lambda: sum(balance(credit, f"u{u}")["balance"] for u in range(3)) == 300)
    assert balance(credit, "u0")["balance"] == 100
    assert len(balance(credit, "u0")["records"]) == 10


def test_the_same_order_sent_twice_credits_once(broker, start_credit) -> None:
    credit = start_credit()
    send(broker, order_message("dup-1"), order_message("dup-1"))
    send(broker, order_message("dup-1"))
    wait_for(lambda: httpx.get(f"{credit.url}/healthz").json()["duplicates"] >= 2)
    assert balance(credit, "u1")["balance"] == 10


def test_two_credit_instances_on_one_group_credit_each_order_once(broker, start_credit) -> None:
    a, b = start_credit(), start_credit()
    orders = [order_message(f"par-{i}", "u-par", "1.00") for i in range(200)]
    for i in range(0, 200, 20):
        send(broker, *orders[i : i + 20], *orders[i : i + 5])  # every 20th batch repeats five orders
    wait_for(lambda: balance(a, "u-par")["balance"] == 200, timeout=60)
    time.sleep(1.5)
    assert balance(b, "u-par")["balance"] == 200
    group = httpx.get(f"{broker.url}/v1/consumer-groups/credit_group").json()
    assert sum(q["lag"] for t in group["topics"] for q in t["queues"]) == 0


def test_crash_between_db_commit_and_ack_still_gives_exactly_one_credit(broker, start_credit) -> None:
    doomed = f"crash-{uuid.uuid4().hex[:6]}"
    credit = start_credit(CREDIT_FAULTS_ENABLED="true", CREDIT_CRASH_AFTER_COMMIT_ORDER=doomed)
    send(broker, order_message(doomed, "u-crash", "5.00"))
    assert credit.wait_exit(30) == 87  # committed the credit, died before acking
    credit.env.pop("CREDIT_CRASH_AFTER_COMMIT_ORDER")
    credit.start()
    wait_for(lambda: httpx.get(f"{credit.url}/healthz").json()["duplicates"] >= 1, timeout=30)  # redelivered, absorbed
    account = balance(credit, "u-crash")
    assert account["balance"] == 5 and [r["order_id"] for r in account["records"]] == [doomed]


def test_poison_messages_reach_the_dlq_and_the_consumer_keeps_going(broker, start_credit) -> None:
    credit = start_credit()
    send(broker, {"body": "not json at all"}, order_message("ok-1", "u-p"), {"body": '{"order_id": "x", "user_id": "u", "amount": "-3"}'})
    send(broker, order_message("ok-2", "u-p"))
    wait_for(lambda: balance(credit, "u-p")["balance"] == 20)

    def dlq() -> list[dict]:
        resp = httpx.get(f"{broker.url}/v1/topics/%25DLQ%25credit_group/queues/0/messages", params={"max": 10})
        return resp.json()["messages"] if resp.status_code == 200 else []

    dead = wait_for(lambda: len(dlq()) == 2 and dlq(), timeout=30)
    assert sorted(m["body"] for m in dead) == sorted(["not json at all", '{"order_id": "x", "user_id": "u", "amount": "-3"}'])
    assert httpx.get(f"{credit.url}/healthz").json()["poison"] >= 6  # 3 deliveries each
