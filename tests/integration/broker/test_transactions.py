"""Transactional messages against a real broker process and a real check-back endpoint."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from tests.integration.broker.api.support import assert_problem
from tests.support.check_server import CheckServer
from tests.support.processes import BrokerProcess
from tests.support.waiting import wait_for

from .http_helpers import path, read_all, receive

FAST_CHECKS = {
    "HALFMQ_BROKER_TRANSACTION_TIMEOUT": "0.5",
    "HALFMQ_BROKER_TRANSACTION_CHECK_INTERVAL": "0.3",
    "HALFMQ_BROKER_TRANSACTION_CHECK_MAX": "3",
    "HALFMQ_BROKER_CHECK_TIMEOUT": "1.0",
}


@pytest.fixture
def tx_broker(start_broker) -> BrokerProcess:
    return start_broker(FAST_CHECKS)


@pytest.fixture
def client(tx_broker: BrokerProcess):
    with httpx.Client(base_url=tx_broker.url, timeout=15) as c:
        c.post("/v1/topics", json={"name": "ORDERS", "queues": 2}).raise_for_status()
        yield c


def heartbeat(client: httpx.Client, url: str, group: str = "pg") -> httpx.Response:
    return client.post("/v1/producers/heartbeat", json={"producer_group": group, "client_id": "c1", "check_url": url})


def half(client: httpx.Client, body: str, group: str = "pg", **message) -> dict:
    resp = client.post("/v1/transactions", json={"producer_group": group, "topic": "ORDERS", "message": {"body": body, **message}})
    resp.raise_for_status()
    return resp.json()


def end(client: httpx.Client, txid: str, state: str, group: str = "pg") -> httpx.Response:
    return client.post(f"/v1/transactions/{txid}/end", json={"producer_group": group, "state": state})


def state_of(client: httpx.Client, txid: str) -> dict:
    resp = client.get(f"/v1/transactions/{txid}")
    resp.raise_for_status()
    return resp.json()


def visible(client: httpx.Client) -> list[str]:
    return sorted(m["body"] for q in range(2) for m in read_all(client, "ORDERS", q))



def test_half_message_is_invisible_to_consumers_and_offset_reads(client: httpx.Client) -> None:
    half(client, "secret")
    assert visible(client) == []
    assert receive(client, "g", "ORDERS", n=10) == []
    resp = client.post(path("v1", "consumer-groups", "g", "topics", "RMQ_SYS_TRANS_HALF_TOPIC", "receive"), json={})
    assert resp.status_code == 403 and resp.json()["code"] == "SYSTEM_TOPIC_FORBIDDEN"


def test_commit_delivers_exactly_one_message_even_when_repeated(client: httpx.Client) -> None:
    tx = half(client, "o1", keys=["order-1"])
    first = end(client, tx["transaction_id"], "commit")
    second = end(client, tx["transaction_id"], "commit")
    assert first.status_code == second.status_code == 200
    assert second.json()["duplicate"] is True and second.json()["final"] == first.json()["final"]
    [msg] = [m for q in range(2) for m in read_all(client, "ORDERS", q)]
    assert msg["body"] == "o1" and msg["keys"] == ["order-1"] and msg["msg_id"] == tx["msg_id"]
    assert msg["properties"]["TRAN_MSG"] == "true" and "REAL_TOPIC" not in msg["properties"]


def test_commit_after_rollback_is_409_and_delivers_nothing(client: httpx.Client) -> None:
    tx = half(client, "o1")
    assert end(client, tx["transaction_id"], "rollback").status_code == 200
    resp = end(client, tx["transaction_id"], "commit")
    assert resp.status_code == 409 and resp.json()["code"] == "TRANSACTION_CONFLICT"
    assert visible(client) == []
    assert state_of(client, tx["transaction_id"])["state"] == "rolled_back"


def test_end_from_another_producer_group_is_refused(client: httpx.Client) -> None:
    tx = half(client, "o1")
    resp = end(client, tx["transaction_id"], "commit", group="intruder")
    # Issue 30 item 12a: answered as no transaction at all, or any group could tell which ids exist.
    unknown = end(client, "no-such-transaction", "commit", group="intruder")
    assert (resp.status_code, resp.json()["code"]) == (unknown.status_code, unknown.json()["code"]) == (404, "TRANSACTION_NOT_FOUND")
    assert resp.json()["detail"].replace(tx["transaction_id"], "ID") == unknown.json()["detail"].replace("no-such-transaction", "ID")
    assert state_of(client, tx["transaction_id"])["state"] == "pending"


def test_end_of_an_unknown_transaction_is_404(client: httpx.Client) -> None:
    resp = end(client, "0" * 32, "commit")
    assert resp.status_code == 404 and resp.json()["code"] == "TRANSACTION_NOT_FOUND"


def test_end_never_sent_is_checked_back_and_committed(client: httpx.Client, checks: CheckServer) -> None:
    checks.answer_state("commit")
    assert heartbeat(client, checks.url).status_code == 200
    tx = half(client, "o1")
    wait_for(lambda: state_of(client, tx["transaction_id"])["state"] == "committed")
    [call] = checks.calls_for(tx["transaction_id"])
    assert call["producer_group"] == "pg" and call["check_times"] == 1
    assert call["message"]["topic"] == "ORDERS" and call["message"]["body"] == "o1"
    assert visible(client) == ["o1"]


def test_rollback_answer_removes_the_half_for_good(client: httpx.Client, checks: CheckServer) -> None:
    checks.answer_state("rollback")
    heartbeat(client, checks.url)
    tx = half(client, "o1")
    wait_for(lambda: state_of(client, tx["transaction_id"])["state"] == "rolled_back")
    assert visible(client) == []


@pytest.mark.parametrize("answer", ["unknown", "garbage", "500", "timeout"])
def test_unanswered_checks_discard_after_the_max(client: httpx.Client, checks: CheckServer, answer: str) -> None:
    checks.answer = {
        "unknown": lambda req: (200, b'{"state": "unknown"}'),
        "garbage": lambda req: (200, b"<html>not json</html>"),
        "500": lambda req: (500, b'{"state": "commit"}'),
        "timeout": lambda req: (0, b""),
    }[answer]
    heartbeat(client, checks.url)
    tx = half(client, "o1")
    final = wait_for(lambda: (s := state_of(client, tx["transaction_id"]))["state"] == "discarded" and s, timeout=30)
    assert final["check_times"] == 3
    assert len(checks.calls_for(tx["transaction_id"])) == 3
    assert visible(client) == []
    discarded = client.get("/v1/transactions", params={"state": "discarded"}).json()
    assert [t["transaction_id"] for t in discarded["transactions"]] == [tx["transaction_id"]]
    assert [m["body"] for m in read_all(client, "TRANS_CHECK_MAX_TIME_TOPIC", 0)] == ["o1"]


def test_operator_resends_a_discarded_message_once(client: httpx.Client, checks: CheckServer) -> None:
    heartbeat(client, checks.url)
    tx = half(client, "o1")
    wait_for(lambda: state_of(client, tx["transaction_id"])["state"] == "discarded", timeout=30)
    assert client.post(f"/v1/transactions/{tx['transaction_id']}/resend").status_code == 200
    assert client.post(f"/v1/transactions/{tx['transaction_id']}/resend").status_code == 409
    assert visible(client) == ["o1"]


def test_checks_that_reach_no_producer_do_not_count(client: httpx.Client, checks: CheckServer) -> None:
    tx = half(client, "o1")
    time.sleep(2.5)  # ~7 check intervals with nobody to ask (RocketMQ would have counted them: #6737)
    pending = state_of(client, tx["transaction_id"])
    assert pending["state"] == "pending" and pending["check_times"] == 0
    checks.answer_state("commit")
    heartbeat(client, checks.url)
    wait_for(lambda: state_of(client, tx["transaction_id"])["state"] == "committed")


def test_unreachable_producer_does_not_count_either(client: httpx.Client) -> None:
    heartbeat(client, "http://127.0.0.1:9/halfmq/check")  # discard port: nothing listens
    tx = half(client, "o1")
    time.sleep(2.0)
    assert state_of(client, tx["transaction_id"])["check_times"] == 0


def test_disallowed_check_url_is_refused_at_heartbeat(client: httpx.Client) -> None:
    for url in ["http://169.254.169.254/latest", "file:///etc/passwd", "http://evil.example/check"]:
        resp = heartbeat(client, url)
        assert resp.status_code == 400 and resp.json()["code"] == "CHECK_URL_REFUSED"
    assert client.get("/v1/producers").json()["groups"] == []


def test_pending_list_shows_age_checks_and_next_check(client: httpx.Client) -> None:
    tx = half(client, "o1")
    listed = client.get("/v1/transactions", params={"state": "pending"}).json()["transactions"]
    [row] = [t for t in listed if t["transaction_id"] == tx["transaction_id"]]
    assert row["check_times"] == 0 and row["age_seconds"] >= 0 and row["next_check_timestamp"] > row["born_timestamp"]
    assert client.post(f"/v1/transactions/{tx['transaction_id']}/force-rollback").json()["state"] == "rolled_back"


def test_outcomes_survive_kill_9_of_the_broker(client: httpx.Client, tx_broker: BrokerProcess) -> None:
    committed = [half(client, f"c{i}") for i in range(5)]
    rolled = [half(client, f"r{i}") for i in range(5)]
    pending = half(client, "p")
    finals = {t["transaction_id"]: end(client, t["transaction_id"], "commit").json()["final"] for t in committed}
    for t in rolled:
        end(client, t["transaction_id"], "rollback")
    tx_broker.kill9()
    tx_broker.start()
    with httpx.Client(base_url=tx_broker.url, timeout=15) as c:
        for t in committed:
            again = end(c, t["transaction_id"], "commit").json()
            assert again["duplicate"] is True and again["final"] == finals[t["transaction_id"]]
        for t in rolled:
            assert end(c, t["transaction_id"], "commit").status_code == 409
        assert state_of(c, pending["transaction_id"])["state"] == "pending"
        assert visible(c) == sorted(f"c{i}" for i in range(5))


def test_a_poisoned_producer_never_stops_check_backs_for_other_groups(start_broker, checks: CheckServer) -> None:
    # The hardening issue: a heartbeat whose check_url held a lone surrogate answered 500 but stayed in memory;
    # from then on the snapshot written when any producer expired raised, and every check round aborted.
    broker = start_broker({**FAST_CHECKS, "HALFMQ_BROKER_PRODUCER_EXPIRY": "1.0"})
    checks.answer_state("commit")
    with httpx.Client(base_url=broker.url, timeout=15) as c:
        c.post("/v1/topics", json={"name": "ORDERS", "queues": 2}).raise_for_status()
        for client_id in ("steady", "leaver"):  # "leaver" stops heartbeating and expires while the half waits
            c.post("/v1/producers/heartbeat", json={"producer_group": "healthy", "client_id": client_id, "check_url": checks.url}).raise_for_status()
        surrogate = json.dumps({"producer_group": "poisoned", "client_id": "p1", "check_url": checks.url + "/\udc00"}).encode()
        assert c.post("/v1/producers/heartbeat", content=surrogate, headers={"content-type": "application/json"}).status_code == 400
        assert heartbeat(c, checks.url + "/\t", group="poisoned").status_code == 400

        def steady_heartbeat() -> None:
            resp = c.post("/v1/producers/heartbeat", json={"producer_group": "healthy", "client_id": "steady", "check_url": checks.url})
            assert resp.status_code == 200, resp.text

        for _ in range(5):  # "leaver" expires; its removal is noticed by the first check of the half below
            time.sleep(0.3)
            steady_heartbeat()
        tx = half(c, "o1", group="healthy")
        wait_for(lambda: steady_heartbeat() or state_of(c, tx["transaction_id"])["state"] == "committed", timeout=15)
        assert [p["client_id"] for g in c.get("/v1/producers").json()["groups"] for p in g["producers"]] == ["steady"]


def test_a_check_url_aimed_at_the_brokers_own_routes_is_refused_and_rolls_nothing_back(client: httpx.Client, tx_broker: BrokerProcess) -> None:
    """The attack: a check_url pointing at the broker's force-rollback route made it roll back another group's transaction."""
    victim = half(client, "victim", group="victim_group")["transaction_id"]
    for host in ("127.0.0.1", "localhost", "[::1]"):
        aimed = f"http://{host}:{tx_broker.port}/v1/transactions/{victim}/force-rollback"
        resp = heartbeat(client, aimed, group="attacker_group")
        assert resp.status_code == 400 and resp.json()["code"] == "CHECK_URL_REFUSED", resp.text
    half(client, "bait", group="attacker_group")  # a transaction the broker would check back with attacker_group
    time.sleep(2.0)  # several check rounds (FAST_CHECKS)
    assert state_of(client, victim)["state"] == "pending"
    assert "attacker_group" not in {g["producer_group"] for g in client.get("/v1/producers").json()["groups"] if g["producers"]}


def half_with_parts(client: httpx.Client, body: str, *also: dict) -> dict:
    resp = client.post("/v1/transactions", json={"producer_group": "pg", "topic": "ORDERS", "message": {"body": body}, "also": list(also)})
    resp.raise_for_status()
    return resp.json()


def due_bodies(client: httpx.Client) -> dict[str, dict]:
    return {m["body"]: m for m in read_all(client, "ORDERS_DUE", 0)}


def test_a_half_with_companions_keeps_its_parts_together_across_kill_9(client: httpx.Client, tx_broker: BrokerProcess) -> None:
    client.post("/v1/topics", json={"name": "ORDERS_DUE", "queues": 1}).raise_for_status()
    parts = lambda n: ({"topic": "ORDERS_DUE", "body": f"now-{n}"}, {"topic": "ORDERS_DUE", "body": f"due-{n}", "delay_ms": 1500})  # noqa: E731
    pending, committed, rolled = (half_with_parts(client, f"o{n}", *parts(n)) for n in (1, 2, 3))
    assert end(client, committed["transaction_id"], "commit").status_code == 200
    assert end(client, rolled["transaction_id"], "rollback").status_code == 200
    tx_broker.kill9()
    tx_broker.start()
    with httpx.Client(base_url=tx_broker.url, timeout=15) as c:
        listed = c.get("/v1/transactions", params={"state": "pending"}).json()["transactions"]
        assert [t["transaction_id"] for t in listed] == [pending["transaction_id"]]  # one transaction, not one per half
        assert listed[0]["message"]["body"] == "o1" and listed[0]["message"]["topic"] == "ORDERS"
        commit_sent_ms = time.time() * 1000
        assert end(c, pending["transaction_id"], "commit").status_code == 200
        wait_for(lambda: len(due_bodies(c)) == 4, timeout=20)
        assert visible(c) == ["o1", "o2"]
        due = due_bodies(c)
        assert sorted(due) == ["due-1", "due-2", "now-1", "now-2"]
        assert due["due-1"]["deliver_at_ms"] >= commit_sent_ms + 1500  # due from its commit, after the restart
        assert {due[b]["properties"]["TRANSACTION_ID"] for b in ("now-1", "due-1")} == {pending["transaction_id"]}


def test_more_than_sixteen_companions_or_one_on_a_system_topic_is_refused_and_stores_nothing(client: httpx.Client) -> None:
    before = client.get("/v1/transactions", params={"state": "pending"}).json()["count"]
    many = [{"topic": "ORDERS_DUE", "body": str(i)} for i in range(17)]
    assert_problem(client.post("/v1/transactions", json={"producer_group": "pg", "topic": "ORDERS", "message": {"body": "o"}, "also": many}),
                   400, "INVALID_REQUEST")
    system = [{"topic": "RMQ_SYS_TRANS_HALF_TOPIC", "body": "x"}]
    assert_problem(client.post("/v1/transactions", json={"producer_group": "pg", "topic": "ORDERS", "message": {"body": "o"}, "also": system}),
                   403, "SYSTEM_TOPIC_FORBIDDEN")
    assert client.get("/v1/transactions", params={"state": "pending"}).json()["count"] == before
    assert client.get(path("v1", "topics", "ORDERS_DUE")).status_code == 404
