"""Batch half and batch end against a real broker process: each item answered on its own, the single routes' checks per item."""

from __future__ import annotations

import httpx
import pytest

from halfmq.wire import MAX_BATCH
from tests.integration.broker.api.support import assert_problem
from tests.support.auth import bearer, write_auth_file
from tests.support.processes import BrokerProcess

from .http_helpers import path

HALVES = "/v1/transaction-batches/half"
ENDS = "/v1/transaction-batches/end"


@pytest.fixture
def client(broker: BrokerProcess):
    with httpx.Client(base_url=broker.url, timeout=15) as c:
        c.post("/v1/topics", json={"name": "ORDERS", "queues": 2}).raise_for_status()
        yield c


def half_item(body: str, group: str = "pg", topic: str = "ORDERS", **numbers: int) -> dict:
    return {"producer_group": group, "topic": topic, "message": {"body": body}, **numbers}


def state_of(client: httpx.Client, txid: str) -> str:
    return client.get(path("v1", "transactions", txid)).json()["state"]


def test_each_half_of_a_batch_gets_its_own_transaction_and_each_end_its_own_view(client):
    resp = client.post(HALVES, json={"items": [half_item(f"order {i}") for i in range(5)]})
    assert resp.status_code == 200
    halves = resp.json()["results"]
    assert [h["status"] for h in halves] == ["SEND_OK"] * 5
    assert len({h["transaction_id"] for h in halves}) == 5
    states = ["commit", "rollback", "commit", "unknown", "commit"]
    ends = client.post(ENDS, json={"items": [{"transaction_id": h["transaction_id"], "producer_group": "pg", "state": s}
                                             for h, s in zip(halves, states, strict=True)]}).json()["results"]
    assert [e["transaction_id"] for e in ends] == [h["transaction_id"] for h in halves]
    assert [e["state"] for e in ends] == ["committed", "rolled_back", "committed", "pending", "committed"]
    assert [e["message"]["body"] for e in ends] == [f"order {i}" for i in range(5)]
    assert [state_of(client, h["transaction_id"]) for h in halves] == ["committed", "rolled_back", "committed", "pending", "committed"]


def test_one_bad_half_among_good_ones_fails_only_itself(client):
    items = [half_item("good 1"), half_item("system topic", topic="RMQ_SYS_TRANS_HALF_TOPIC"), {"producer_group": "pg"},
             half_item("bad group", group="no spaces allowed"), half_item("good 2")]
    results = client.post(HALVES, json={"items": items}).json()["results"]
    assert results[0]["status"] == results[4]["status"] == "SEND_OK"
    problems = [r["problem"] for r in results[1:4]]
    alone = [client.post("/v1/transactions", json=item) for item in items[1:4]]  # what the single route answers each
    assert [(p["status"], p["code"]) for p in problems] == [(a.status_code, a.json()["code"]) for a in alone]
    assert all(400 <= p["status"] < 500 for p in problems)
    for good in (results[0], results[4]):
        assert state_of(client, good["transaction_id"]) == "pending"


def test_ending_another_groups_transaction_is_refused_for_that_item_only(client):
    mine, theirs = client.post(HALVES, json={"items": [half_item("mine"), half_item("theirs", group="other")]}).json()["results"]
    results = client.post(ENDS, json={"items": [
        {"transaction_id": mine["transaction_id"], "producer_group": "pg", "state": "commit"},
        {"transaction_id": theirs["transaction_id"], "producer_group": "pg", "state": "commit"},
        {"transaction_id": "no-such-transaction", "producer_group": "pg", "state": "commit"},
    ]}).json()["results"]
    assert results[0]["state"] == "committed"
    assert results[1]["problem"]["code"] == "TRANSACTION_NOT_FOUND"  # as for none at all: no oracle (issue 30, 12a)
    assert results[2]["problem"]["status"] == 404
    assert state_of(client, theirs["transaction_id"]) == "pending"


def test_a_numbered_half_repeated_in_a_batch_is_answered_from_the_window_and_stored_once(client):
    ids = client.post("/v1/producer-ids", json={}).json()
    numbered = half_item("once", producer_id=ids["producer_id"], epoch=ids["epoch"], sequence=0)
    first = client.post(HALVES, json={"items": [numbered]}).json()["results"][0]
    again = client.post(HALVES, json={"items": [numbered, half_item("fresh")]}).json()["results"]
    assert again[0]["transaction_id"] == first["transaction_id"] and again[0]["duplicate"] is True
    assert again[1]["transaction_id"] != first["transaction_id"]
    pending = client.get("/v1/transactions", params={"state": "pending"}).json()["transactions"]
    assert sum(t["message"]["body"] == "once" for t in pending) == 1


def test_an_end_repeated_in_a_batch_is_a_duplicate_and_the_opposite_end_a_problem(client):
    txid = client.post(HALVES, json={"items": [half_item("x")]}).json()["results"][0]["transaction_id"]
    commit = {"transaction_id": txid, "producer_group": "pg", "state": "commit"}
    first, repeat = client.post(ENDS, json={"items": [commit, commit]}).json()["results"]
    assert first["state"] == repeat["state"] == "committed" and repeat["duplicate"] is True
    opposite = client.post(ENDS, json={"items": [{**commit, "state": "rollback"}]}).json()["results"][0]
    assert opposite["problem"]["status"] == 409


@pytest.mark.parametrize("body", [{}, {"items": []}, {"items": "x"}, {"items": [half_item("x")], "extra": 1},
                                  {"items": [half_item(str(i)) for i in range(MAX_BATCH + 1)]}])
def test_a_malformed_batch_or_one_over_max_batch_is_refused_whole(client, body):
    before = len(client.get("/v1/transactions", params={"state": "pending", "limit": 10_000}).json()["transactions"])
    for route in (HALVES, ENDS):
        refused = client.post(route, json=body)
        assert 400 <= refused.status_code < 500 and refused.headers["content-type"] == "application/problem+json"
        assert refused.json()["code"]
    assert len(client.get("/v1/transactions", params={"state": "pending", "limit": 10_000}).json()["transactions"]) == before


def test_with_auth_each_item_is_authorized_on_its_own_and_a_stranger_is_refused_whole(start_broker, tmp_path):
    _, tokens = write_auth_file(tmp_path / "auth.json")
    broker = start_broker({"HALFMQ_BROKER_AUTH_FILE": str(tmp_path / "auth.json")})
    with httpx.Client(base_url=broker.url, timeout=15, headers=bearer(tokens["order"])) as order, \
            httpx.Client(base_url=broker.url, timeout=15, headers=bearer(tokens["mallory"])) as mallory, \
            httpx.Client(base_url=broker.url, timeout=15) as anonymous:
        items = [half_item("ok", group="order_producer_group", topic="ORDER_TOPIC"),
                 half_item("not my topic", group="order_producer_group", topic="CREDIT_TOPIC"),
                 half_item("not my group", group="mallory_group", topic="ORDER_TOPIC")]
        results = order.post(HALVES, json={"items": items}).json()["results"]
        assert results[0]["status"] == "SEND_OK"
        assert [r["problem"]["code"] for r in results[1:]] == ["ACCESS_DENIED", "ACCESS_DENIED"]
        txid = results[0]["transaction_id"]
        assert_problem(anonymous.post(ENDS, json={"items": [{"transaction_id": txid, "producer_group": "order_producer_group",
                                                             "state": "commit"}]}), 401, "UNAUTHENTICATED")
        stolen = mallory.post(ENDS, json={"items": [{"transaction_id": txid, "producer_group": "order_producer_group",
                                                     "state": "rollback"}]}).json()["results"][0]
        assert stolen["problem"]["code"] == "ACCESS_DENIED"
        ended = order.post(ENDS, json={"items": [{"transaction_id": txid, "producer_group": "order_producer_group",
                                                  "state": "commit"}]}).json()["results"][0]
        assert ended["state"] == "committed"
