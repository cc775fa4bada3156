"""`halfmq admin transactions|topics|groups|dlq|producers|cluster|transactional-ids|messages` against a real broker.

Every read is run with --json and parsed back; actions are checked by what the
broker does afterwards (a consumer gets the force-committed message, a DLQ
message is delivered again).
"""

from __future__ import annotations

import json
import os
import subprocess

import httpx
import pytest

from tests.integration.broker.http_helpers import path, receive, send
from tests.support.processes import ROOT, BrokerProcess, halfmq_command
from tests.support.waiting import wait_for


def admin(broker: BrokerProcess, *args: str, token: str | None = None, ok: bool = True) -> subprocess.CompletedProcess:
    argv = halfmq_command("admin", *args, "--broker", broker.url, *(["--token", token] if token else []))
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=60, env={**os.environ, "COLUMNS": "200"})
    if ok:
        assert done.returncode == 0, done.stderr
    return done


def admin_json(broker: BrokerProcess, *args: str) -> dict:
    return json.loads(admin(broker, *args, "--json").stdout)


@pytest.fixture
def client(broker: BrokerProcess):
    with httpx.Client(base_url=broker.url, timeout=15) as c:
        c.post("/v1/topics", json={"name": "ORDERS", "queues": 2}).raise_for_status()
        yield c


def half(client: httpx.Client, body: str) -> str:
    resp = client.post("/v1/transactions", json={"producer_group": "pg", "topic": "ORDERS", "message": {"body": body}})
    resp.raise_for_status()
    return resp.json()["transaction_id"]


def test_a_hanging_transaction_is_listed_shown_and_force_committed_to_a_consumer(broker, client) -> None:
    txid = half(client, "order 42 paid")
    listed = admin_json(broker, "transactions", "list")
    assert [t["transaction_id"] for t in listed["transactions"]] == [txid]
    assert txid in admin(broker, "transactions", "list").stdout  # the table names it too
    shown = admin_json(broker, "transactions", "show", txid)
    assert shown["state"] == "pending" and shown["message"]["body"] == "order 42 paid"
    assert receive(client, "g", "ORDERS") == []
    committed = admin_json(broker, "transactions", "commit", txid)
    assert committed["state"] == "committed"
    assert [m["body"] for m in receive(client, "g", "ORDERS")] == ["order 42 paid"]
    assert admin_json(broker, "transactions", "list")["count"] == 0


def test_a_rollback_from_the_terminal_keeps_the_message_from_consumers(broker, client) -> None:
    txid = half(client, "cancelled")
    assert admin_json(broker, "transactions", "rollback", txid)["state"] == "rolled_back"
    assert receive(client, "g", "ORDERS") == []
    assert admin_json(broker, "transactions", "list", "--state", "rolled_back")["count"] == 1


def test_topics_groups_and_lag_read_back_as_json(broker, client) -> None:
    created = admin_json(broker, "topics", "create", "PAYMENTS", "--queues", "3")
    assert len(created["queues"]) == 3
    assert {t["name"] for t in admin_json(broker, "topics", "list")["topics"]} >= {"ORDERS", "PAYMENTS"}
    send(client, "PAYMENTS", "a", "b", "c", "d")
    assert sum(q["max_offset"] for q in admin_json(broker, "topics", "show", "PAYMENTS")["queues"]) == 4
    receive(client, "billing", "PAYMENTS", n=1)
    groups = admin_json(broker, "groups", "list")["groups"]
    [group] = groups
    assert (group["group"], group["lag"], group["in_flight"], group["dlq_depth"]) == ("billing", 4, 1, 0)
    lag = admin_json(broker, "groups", "lag", "billing")
    assert sum(q["lag"] for t in lag["topics"] for q in t["queues"]) == 4
    assert "billing" in admin(broker, "groups", "list").stdout


def test_a_dead_letter_is_listed_and_resent_to_its_topic(broker, client) -> None:
    send(client, "ORDERS", "poison")
    # conftest's broker: 3 deliveries, then the DLQ
    def dead() -> bool:
        for m in receive(client, "g", "ORDERS", invisible=0.2):
            client.post(path("v1", "consumer-groups", "g", "topics", "ORDERS", "nack"), json={"receipt_handles": [m["receipt_handle"]]})
        return admin_json(broker, "dlq", "list", "g")["depth"] == 1
    wait_for(dead, timeout=20, interval=0.3)
    [letter] = admin_json(broker, "dlq", "list", "g")["messages"]
    assert letter["body"] == "poison" and letter["properties"]["REAL_TOPIC"] == "ORDERS"
    resent = admin_json(broker, "dlq", "resend", "g", str(letter["queue_offset"]))
    assert resent["topic"] == "ORDERS"
    again = receive(client, "g", "ORDERS", wait=2)
    assert [m["body"] for m in again] == ["poison"]
    assert again[0]["properties"]["DLQ_RESENT_FROM"] == f"%DLQ%g@{letter['queue_offset']}"
    assert "DLQ_MESSAGE_NOT_FOUND" in admin(broker, "dlq", "resend", "g", "99", ok=False).stderr


def test_producers_cluster_and_transactional_ids_read_back(broker, client) -> None:
    client.post("/v1/producers/heartbeat", json={"producer_group": "pg", "client_id": "c1", "check_url": "http://127.0.0.1:9/check"}).raise_for_status()
    assert admin_json(broker, "producers", "list")["groups"][0]["producers"][0]["client_id"] == "c1"
    cluster = admin_json(broker, "cluster", "show")
    assert cluster["mode"] == "single node" or cluster.get("brokers")
    client.post("/v1/transactional-ids/copier/init", json={}).raise_for_status()
    [tid] = admin_json(broker, "transactional-ids", "list")["transactional_ids"]
    assert tid["transactional_id"] == "copier"


def test_an_open_producer_transaction_is_aborted_from_the_terminal(broker, client) -> None:
    init = client.post("/v1/transactional-ids/copier/init", json={}).json()
    fence = {"producer_id": init["producer_id"], "epoch": init["epoch"]}
    client.post("/v1/transactional-ids/copier/begin", json={**fence, "sequence": 0}).raise_for_status()
    [open_one] = admin_json(broker, "transactional-ids", "list")["transactional_ids"]
    assert open_one["open"] is not None
    admin_json(broker, "transactional-ids", "abort", "copier")
    [after] = admin_json(broker, "transactional-ids", "list")["transactional_ids"]
    assert after["open"] is None and after["aborted_by"] == "operator"


def test_a_refusal_is_one_line_with_the_problem_code(broker, client) -> None:
    done = admin(broker, "transactions", "show", "nope", ok=False)
    assert done.returncode != 0 and "TRANSACTION_NOT_FOUND" in done.stderr


def test_under_auth_the_verbs_need_an_admin_token(start_broker, tmp_path) -> None:
    from tests.support.auth import write_auth_file

    _, tokens = write_auth_file(tmp_path / "auth.json")
    secured = start_broker({"HALFMQ_BROKER_AUTH_FILE": str(tmp_path / "auth.json")})
    assert "UNAUTHENTICATED" in admin(secured, "groups", "list", ok=False).stderr
    assert "ACCESS_DENIED" in admin(secured, "groups", "list", token=tokens["credit"], ok=False).stderr
    assert "ACCESS_DENIED" in admin(secured, "dlq", "resend", "credit_group", "0", token=tokens["credit"], ok=False).stderr
    answer = admin(secured, "groups", "list", "--json", token=tokens["admin"])
    assert json.loads(answer.stdout)["count"] == 0


def test_a_discarded_transaction_is_resent_and_a_pending_one_rechecked_from_the_terminal(start_broker) -> None:
    from tests.support.check_server import CheckServer

    checks = CheckServer()
    try:
        fast = start_broker({"HALFMQ_BROKER_TRANSACTION_TIMEOUT": "0.5", "HALFMQ_BROKER_TRANSACTION_CHECK_INTERVAL": "0.3",
                             "HALFMQ_BROKER_TRANSACTION_CHECK_MAX": "20", "HALFMQ_BROKER_CHECK_TIMEOUT": "1.0"})
        # 20 unanswered checks (~6 s) before a discard: room for a CLI process to start on a loaded machine before "other"
        # is discarded, and "unsure" is still discarded well inside the wait below
        with httpx.Client(base_url=fast.url, timeout=15) as client:
            client.post("/v1/topics", json={"name": "ORDERS", "queues": 1}).raise_for_status()
            client.post("/v1/producers/heartbeat", json={"producer_group": "pg", "client_id": "c1", "check_url": checks.url}).raise_for_status()
            other = half(client, "asked again")  # young: not due for a check for 0.5 s
            assert admin_json(fast, "transactions", "recheck", other)["transaction_id"] == other
            wait_for(lambda: checks.calls_for(other), timeout=10)
            txid = half(client, "unsure")  # the check server answers "unknown" until told otherwise
            wait_for(lambda: client.get(f"/v1/transactions/{txid}").json()["state"] == "discarded", timeout=60)
            assert txid in {t["transaction_id"] for t in admin_json(fast, "transactions", "list", "--state", "discarded")["transactions"]}
            checks.answer_state("commit")
            assert admin_json(fast, "transactions", "resend", txid)["state"] in ("pending", "committed")  # checked at once
            wait_for(lambda: client.get(f"/v1/transactions/{txid}").json()["state"] == "committed", timeout=20)
            assert "unsure" in [m["body"] for m in receive(client, "g", "ORDERS", wait=2)]
    finally:
        checks.close()


def test_groups_show_is_the_group_as_a_whole_and_groups_lag_its_queues(broker, client) -> None:
    send(client, "ORDERS", "a", "b", "c")
    receive(client, "billing", "ORDERS", n=1)
    shown = admin(broker, "groups", "show", "billing").stdout
    lag = admin(broker, "groups", "lag", "billing").stdout
    assert "group billing: lag 3, in flight 1, retrying 0, DLQ depth 0" in shown
    assert shown != lag and sum(line.startswith("│") for line in lag.splitlines()) == 2  # ORDERS has two queues
    assert admin_json(broker, "groups", "show", "billing")["summary"]["lag"] == 3
    assert "CONSUMER_GROUP_NOT_FOUND" in admin(broker, "groups", "show", "nobody", ok=False).stderr


def test_an_unreachable_broker_is_one_line_with_the_fix_and_a_non_zero_exit() -> None:
    from tests.support.processes import free_port_run

    argv = halfmq_command("admin", "groups", "list", "--broker", f"http://127.0.0.1:{free_port_run(1)}")
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "cannot reach the broker" in done.stderr and "--broker" in done.stderr


def test_a_missing_token_is_one_line_that_says_how_to_pass_one(start_broker, tmp_path) -> None:
    from tests.support.auth import write_auth_file

    write_auth_file(tmp_path / "auth.json")
    secured = start_broker({"HALFMQ_BROKER_AUTH_FILE": str(tmp_path / "auth.json")})
    done = admin(secured, "topics", "list", ok=False)
    assert done.returncode != 0 and len(done.stderr.strip().splitlines()) == 1
    assert "UNAUTHENTICATED" in done.stderr and "--token" in done.stderr and "$HALFMQ_TOKEN" in done.stderr


def test_messages_show_prints_a_force_committed_message_s_journey_and_find_lists_it_by_key(broker, client) -> None:
    resp = client.post("/v1/transactions", json={"producer_group": "pg", "topic": "ORDERS",
                                                  "message": {"body": "order 43", "keys": ["order-43"]}})
    resp.raise_for_status()
    msg_id, txid = resp.json()["msg_id"], resp.json()["transaction_id"]
    admin(broker, "transactions", "commit", txid)
    shown = admin_json(broker, "messages", "show", msg_id)
    assert [e["kind"] for e in shown["events"]] == ["half_stored", "committed"]
    table = admin(broker, "messages", "show", msg_id).stdout
    assert "half_stored" in table and "committed" in table and "order-43" in table
    found = admin_json(broker, "messages", "find", "order-43")
    assert [m["msg_id"] for m in found["messages"]] == [msg_id]
    assert msg_id in admin(broker, "messages", "find", "order-43").stdout
    assert "MESSAGE_NOT_FOUND" in admin(broker, "messages", "show", "nope", ok=False).stderr


def test_a_groups_offsets_are_reset_after_a_dry_run_that_prints_the_plan(broker, client) -> None:
    client.post("/v1/topics", json={"name": "REPLAY", "queues": 1}).raise_for_status()
    send(client, "REPLAY", *[f"m{i}" for i in range(5)])
    got = receive(client, "g", "REPLAY")
    client.post(path("v1", "consumer-groups", "g", "topics", "REPLAY", "ack"),
                json={"receipt_handles": [m["receipt_handle"] for m in got]}).raise_for_status()
    plan = admin(broker, "groups", "reset-offsets", "g", "REPLAY", "--by-duration", "1h", "--dry-run").stdout
    assert "dry run" in plan and "-5" in plan  # queue 0: 5 → 0
    assert admin_json(broker, "groups", "lag", "g")["topics"][0]["queues"][0]["committed_offset"] == 5
    done = admin_json(broker, "groups", "reset-offsets", "g", "REPLAY", "--to-offset", "2")
    assert done["applied"] is True and done["queues"] == [{"queue_id": 0, "from_offset": 5, "to_offset": 2, "in_flight": 0}]
    assert [m["body"] for m in receive(client, "g", "REPLAY")] == ["m2", "m3", "m4"]
    refused = admin(broker, "groups", "reset-offsets", "g", "REPLAY", "--to-earliest", ok=False)
    assert refused.returncode != 0 and "GROUP_HAS_DELIVERIES_IN_FLIGHT" in refused.stderr
    assert admin_json(broker, "groups", "reset-offsets", "g", "REPLAY", "--to-earliest", "--force")["queues"][0]["to_offset"] == 0
    no_target = admin(broker, "groups", "reset-offsets", "g", "REPLAY", ok=False)
    assert no_target.returncode != 0 and "name one target" in no_target.stderr
    bad_duration = admin(broker, "groups", "reset-offsets", "g", "REPLAY", "--by-duration", "soon", ok=False)
    assert bad_duration.returncode != 0 and "--by-duration 'soon'" in bad_duration.stderr


def test_a_groups_dlq_is_redriven_watched_and_stopped(broker, client) -> None:
    send(client, "ORDERS", "poison-1", "poison-2")

    def dead() -> bool:
        got = receive(client, "r", "ORDERS", invisible=0.2)
        if got:
            client.post(path("v1", "consumer-groups", "r", "topics", "ORDERS", "nack"),
                        json={"receipt_handles": [m["receipt_handle"] for m in got]})
        return admin_json(broker, "dlq", "list", "r")["depth"] == 2
    wait_for(dead, timeout=30, interval=0.3)
    started = admin_json(broker, "dlq", "redrive", "r", "--rate", "50")
    assert started["state"] == "running" and started["total"] == 2
    wait_for(lambda: admin_json(broker, "dlq", "redrive-status", "r")["state"] == "done", timeout=30)
    shown = admin(broker, "dlq", "redrive-status", "r").stdout
    assert "DLQ redrive of r: done" in shown and "2 of 2" in shown
    assert sorted(m["body"] for m in receive(client, "r", "ORDERS", wait=2)) == ["poison-1", "poison-2"]
    assert admin_json(broker, "dlq", "redrive", "r", "--rate", "0.5", "--max", "1")["total"] == 1
    assert admin_json(broker, "dlq", "redrive-stop", "r")["state"] in ("stopped", "done")
    assert "DLQ_REDRIVE_NOT_FOUND" in admin(broker, "dlq", "redrive-status", "nobody", ok=False).stderr


def test_a_group_is_deleted_unless_it_holds_deliveries(broker, client) -> None:
    send(client, "ORDERS", "x")
    held = receive(client, "doomed", "ORDERS")
    refused = admin(broker, "groups", "delete", "doomed", ok=False)
    assert refused.returncode != 0 and "GROUP_HAS_DELIVERIES_IN_FLIGHT" in refused.stderr
    assert admin_json(broker, "groups", "delete", "doomed", "--force") == {"group": "doomed", "topics": ["ORDERS"], "in_flight": len(held)}
    assert "doomed" not in admin(broker, "groups", "list").stdout
    assert "CONSUMER_GROUP_NOT_FOUND" in admin(broker, "groups", "delete", "doomed", ok=False).stderr


def test_a_topic_is_deleted_unless_it_holds_deliveries(broker, client) -> None:
    send(client, "ORDERS", "a")
    held = receive(client, "g", "ORDERS")
    refused = admin(broker, "topics", "delete", "ORDERS", ok=False)
    assert refused.returncode != 0 and "TOPIC_IN_USE" in refused.stderr
    assert "ORDERS" in {t["name"] for t in admin_json(broker, "topics", "list")["topics"]}
    deleted = admin_json(broker, "topics", "delete", "ORDERS", "--force")
    assert deleted == {"topic": "ORDERS", "queue_ends": deleted["queue_ends"], "pending_halves": 0, "in_flight": len(held)}
    assert "ORDERS" not in {t["name"] for t in admin_json(broker, "topics", "list")["topics"]}
    assert "TOPIC_NOT_FOUND" in admin(broker, "topics", "delete", "ORDERS", ok=False).stderr


def test_a_delayed_message_is_recalled_by_its_handle_and_a_due_one_is_too_late(broker, client) -> None:
    [later] = send(client, "ORDERS", "later", delay_ms=60_000)
    assert admin_json(broker, "messages", "recall", "ORDERS", later["recall_handle"]) == {
        "msg_id": later["msg_id"], "topic": "ORDERS", "deliver_at_ms": later["deliver_at_ms"]}
    [due] = send(client, "ORDERS", "due", delay_ms=200)
    wait_for(lambda: [m for m in receive(client, "g", "ORDERS") if m["body"] == "due"], timeout=20)
    late = admin(broker, "messages", "recall", "ORDERS", due["recall_handle"], ok=False)
    assert late.returncode != 0 and "RECALL_TOO_LATE" in late.stderr


def test_a_topic_is_created_with_its_own_retention_altered_and_shown(broker, client) -> None:
    created = admin_json(broker, "topics", "create", "KEPT", "--queues", "1", "--retention", "12h", "--retention-bytes", "1000000")
    assert (created["retention_ms"], created["retention_bytes"]) == (12 * 3_600_000, 1_000_000)
    altered = admin_json(broker, "topics", "alter", "KEPT", "--retention", "7d")
    assert (altered["retention_ms"], altered["retention_bytes"]) == (7 * 86_400_000, 1_000_000)  # the bytes stay
    assert "retention 7 d, 1000000 bytes a queue" in admin(broker, "topics", "show", "KEPT").stdout
    back = admin_json(broker, "topics", "alter", "KEPT", "--retention-bytes", "broker")
    assert back["retention_ms"] == 7 * 86_400_000 and "retention_bytes" not in back
    assert client.get(path("v1", "topics", "KEPT")).json()["retention_ms"] == 7 * 86_400_000
    refused = admin(broker, "topics", "alter", "KEPT", "--retention", "10ms", ok=False)
    assert refused.returncode != 0 and "INVALID_RETENTION" in refused.stderr
    assert "--retention 'soon'" in admin(broker, "topics", "alter", "KEPT", "--retention", "soon", ok=False).stderr
    assert "retention: the broker's" in admin(broker, "topics", "show", "ORDERS").stdout
