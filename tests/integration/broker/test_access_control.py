"""The attacks from the security issue against a real broker with auth on: each answered 401/403, nothing changed."""

from __future__ import annotations

import httpx
import pytest

from tests.integration.broker.api.support import assert_problem

from .http_helpers import path

HALF = "RMQ_SYS_TRANS_HALF_TOPIC"


def open_transaction(order: httpx.Client) -> str:
    resp = order.post("/v1/transactions", json={"producer_group": "order_producer_group", "topic": "ORDER_TOPIC",
                                                 "message": {"body": '{"order_id": "o-1", "amount": "10"}'}})
    resp.raise_for_status()
    return resp.json()["transaction_id"]


def order_topic_size(admin: httpx.Client) -> int:
    resp = admin.get(path("v1", "topics", "ORDER_TOPIC"))
    if resp.status_code == 404:
        return 0
    return sum(q["max_offset"] for q in resp.json()["queues"])


def tx_state(admin: httpx.Client, txid: str) -> str:
    return admin.get(path("v1", "transactions", txid)).json()["state"]


def test_a_forged_order_without_a_token_is_401_and_with_a_foreign_token_403(as_):
    forged = {"messages": [{"body": '{"order_id": "forged", "user_id": "u", "amount": "999999999"}'}]}
    before = order_topic_size(as_("admin"))
    anonymous = as_(None).post(path("v1", "topics", "ORDER_TOPIC", "messages"), json=forged)
    assert_problem(anonymous, 401, "UNAUTHENTICATED")
    assert anonymous.headers["www-authenticate"].startswith("Bearer")
    for name in ("credit", "mallory"):
        assert_problem(as_(name).post(path("v1", "topics", "ORDER_TOPIC", "messages"), json=forged), 403, "ACCESS_DENIED")
    assert_problem(as_(None).post("/v1/transactions", json={"producer_group": "order_producer_group", "topic": "ORDER_TOPIC",
                                                          "message": {"body": "forged"}}), 401, "UNAUTHENTICATED")
    assert_problem(as_("mallory").post("/v1/transactions", json={"producer_group": "mallory_group", "topic": "ORDER_TOPIC",
                                                               "message": {"body": "forged"}}), 403, "ACCESS_DENIED")
    assert order_topic_size(as_("admin")) == before


@pytest.mark.parametrize("header", ["Bearer hmq_not-a-token", "Basic YWRtaW46YWRtaW4=", "Bearer", "hmq_token-without-scheme"])
def test_a_wrong_or_malformed_token_is_401(secured, header):
    broker, _ = secured
    with httpx.Client(base_url=broker.url, headers={"authorization": header}) as client:
        assert_problem(client.get("/v1/topics"), 401, "UNAUTHENTICATED")
        assert_problem(client.post(path("v1", "topics", "ORDER_TOPIC", "messages"), json={"messages": [{"body": "x"}]}), 401, "UNAUTHENTICATED")


def test_only_the_producer_groups_principal_ends_its_transaction(as_):
    order, mallory, admin = as_("order"), as_("mallory"), as_("admin")
    txid = open_transaction(order)
    for client, status, code in ((as_(None), 401, "UNAUTHENTICATED"), (mallory, 403, "ACCESS_DENIED"), (as_("credit"), 403, "ACCESS_DENIED")):
        # the group name is the one the transaction really has: knowing it is not enough
        resp = client.post(path("v1", "transactions", txid, "end"), json={"producer_group": "order_producer_group", "state": "rollback"})
        assert_problem(resp, status, code)
    # mallory's own group does not own it either
    resp = mallory.post(path("v1", "transactions", txid, "end"), json={"producer_group": "mallory_group", "state": "commit"})
    assert_problem(resp, 404, "TRANSACTION_NOT_FOUND")  # as for none at all: no oracle (issue 30, 12a)
    assert tx_state(admin, txid) == "pending"
    assert order.post(path("v1", "transactions", txid, "end"), json={"producer_group": "order_producer_group", "state": "commit"}).status_code == 200
    assert tx_state(admin, txid) == "committed"


@pytest.mark.parametrize("action", ["force-commit", "force-rollback", "recheck", "resend"])
def test_operator_actions_on_a_transaction_need_admin_on_its_group(as_, action):
    order, admin = as_("order"), as_("admin")
    txid = open_transaction(order)
    assert_problem(as_(None).post(path("v1", "transactions", txid, action)), 401, "UNAUTHENTICATED")
    for name in ("mallory", "credit"):  # strangers to the group: as for no transaction at all (issue 30, 12a)
        assert_problem(as_(name).post(path("v1", "transactions", txid, action)), 404, "TRANSACTION_NOT_FOUND")
    assert_problem(as_("order").post(path("v1", "transactions", txid, action)), 403, "ACCESS_DENIED")  # publishing is not administering
    assert tx_state(admin, txid) == "pending"
    if action == "force-rollback":
        assert admin.post(path("v1", "transactions", txid, action)).status_code == 200
        assert tx_state(admin, txid) == "rolled_back"


def test_strangers_cannot_look_transactions_or_producers_up(as_):
    txid = open_transaction(as_("order"))
    assert_problem(as_(None).get(path("v1", "transactions", "no-such-tx")), 401, "UNAUTHENTICATED")  # no 404 oracle
    assert_problem(as_("mallory").get(path("v1", "transactions", txid)), 404, "TRANSACTION_NOT_FOUND")  # no oracle either
    assert as_("order").get(path("v1", "transactions", txid)).json()["state"] == "pending"
    for route in ("/v1/transactions", "/v1/producers", "/metrics"):
        assert_problem(as_("mallory").get(route), 403, "ACCESS_DENIED")
        assert as_("admin").get(route).status_code == 200


def test_a_stranger_cannot_tell_whether_another_groups_transaction_exists(as_):
    txid = open_transaction(as_("order"))
    unknown = "C0A8000100002A9F" + "0" * (len(txid) - 16)
    mallory = as_("mallory")
    probes = [
        lambda t: mallory.post(path("v1", "transactions", t, "end"), json={"producer_group": "mallory_group", "state": "rollback"}),
        lambda t: mallory.get(path("v1", "transactions", t)),
        lambda t: mallory.post(path("v1", "transactions", t, "force-rollback")),
        lambda t: mallory.post("/v1/transaction-batches/end", json={"items": [
            {"transaction_id": t, "producer_group": "mallory_group", "state": "rollback"}]}),
    ]
    for probe in probes:
        real, none = probe(txid), probe(unknown)
        assert real.status_code == none.status_code and real.text.replace(txid, "ID") == none.text.replace(unknown, "ID")
        assert "TRANSACTION_NOT_FOUND" in real.text
    assert tx_state(as_("admin"), txid) == "pending"


def test_the_half_topic_is_readable_by_admin_only(as_):
    open_transaction(as_("order"))
    for name in ("order", "credit", "mallory"):
        resp = as_(name).get(path("v1", "topics", HALF, "queues", 0, "messages"), params={"offset": 0})
        assert_problem(resp, 403, "ACCESS_DENIED")
    resp = as_("admin").get(path("v1", "topics", HALF, "queues", 0, "messages"), params={"offset": 0})
    assert resp.status_code == 200 and len(resp.json()["messages"]) == 1


def test_consuming_needs_subscribe_on_both_group_and_topic(as_):
    receive = {"max_messages": 1, "invisible_seconds": 30, "wait_seconds": 0}
    url = path("v1", "consumer-groups", "credit_group", "topics", "ORDER_TOPIC", "receive")
    assert_problem(as_(None).post(url, json=receive), 401, "UNAUTHENTICATED")
    assert_problem(as_("mallory").post(url, json=receive), 403, "ACCESS_DENIED")
    assert_problem(as_("mallory").post(path("v1", "consumer-groups", "mallory_group", "topics", "ORDER_TOPIC", "receive"), json=receive),
                   403, "ACCESS_DENIED")
    assert_problem(as_("mallory").post(path("v1", "consumer-groups", "credit_group", "topics", "ORDER_TOPIC", "ack"),
                                       json={"receipt_handles": ["x"]}), 403, "ACCESS_DENIED")
    as_("order").post(path("v1", "topics", "ORDER_TOPIC", "messages"), json={"messages": [{"body": "real"}]}).raise_for_status()
    assert len(as_("credit").post(url, json=receive).json()["messages"]) == 1


def test_topic_listing_shows_only_what_the_principal_may_describe(as_):
    as_("order").post(path("v1", "topics", "ORDER_TOPIC", "messages"), json={"messages": [{"body": "x"}]}).raise_for_status()
    as_("mallory").post(path("v1", "topics", "MALLORY_T", "messages"), json={"messages": [{"body": "x"}]}).raise_for_status()
    names = {t["name"] for t in as_("mallory").get("/v1/topics").json()["topics"]}
    assert names == {"MALLORY_T"}
    assert_problem(as_("mallory").post("/v1/topics", json={"name": "MALLORY_NEW", "queues": 1}), 403, "ACCESS_DENIED")


def test_decisions_are_counted_and_refusals_audited(secured, as_):
    broker, _ = secured
    as_("mallory").post(path("v1", "topics", "ORDER_TOPIC", "messages"), json={"messages": [{"body": "x"}]})
    as_(None).get("/v1/topics")
    metrics = as_("admin").get("/metrics").text
    assert 'halfmq_auth_decisions_total{result="deny"} 1.0' in metrics
    assert 'halfmq_auth_decisions_total{result="unauthenticated"} 1.0' in metrics
    log = broker.log_path.read_text()
    assert "principal=mallory action=publish resource=topic:ORDER_TOPIC result=deny" in log
    assert "principal=admin action=admin resource=cluster:broker result=allow" in log


def test_health_stays_open(as_):
    assert as_(None).get("/healthz").status_code == 200


def test_one_service_cannot_init_or_end_another_services_producer_transaction(as_):
    order = as_("order")
    answer = order.post(path("v1", "transactional-ids", "order-tx", "init"), json={})
    assert answer.status_code == 200, answer.text
    ids = {"producer_id": answer.json()["producer_id"], "epoch": answer.json()["epoch"]}
    assert order.post(path("v1", "transactional-ids", "order-tx", "begin"), json={**ids, "sequence": 0}).status_code == 200
    for verb, body in (("init", {}), ("commit", ids), ("abort", ids), ("force-abort", None)):
        assert_problem(as_("mallory").post(path("v1", "transactional-ids", "order-tx", verb), json=body), 403, "ACCESS_DENIED")
        assert_problem(as_(None).post(path("v1", "transactional-ids", "order-tx", verb), json=body), 401, "UNAUTHENTICATED")
    assert_problem(order.post(path("v1", "transactional-ids", "order-tx", "force-abort")), 403, "ACCESS_DENIED")  # publish is not admin
    assert_problem(order.post(path("v1", "transactional-ids", "order-tx", "messages"),
                              json={**ids, "sequence": 1, "messages": [{"topic": "MALLORY_T", "body": "x"}]}), 403, "ACCESS_DENIED")
    assert as_("mallory").get("/v1/transactional-ids").json()["transactional_ids"] == []
    view = as_("admin").get(path("v1", "transactional-ids", "order-tx")).json()
    assert view["state"] == "ONGOING" and view["epoch"] == ids["epoch"]
    assert order.post(path("v1", "transactional-ids", "order-tx", "commit"), json=ids).status_code == 200


def test_a_producer_id_is_handed_to_principals_that_may_publish_and_refused_to_others(as_):
    assert_problem(as_(None).post("/v1/producer-ids", json={}), 401, "UNAUTHENTICATED")
    assert_problem(as_("credit").post("/v1/producer-ids", json={}), 403, "ACCESS_DENIED")  # subscribe only
    ids = as_("order").post("/v1/producer-ids", json={})
    assert ids.status_code == 201, ids.text
    # The id numbers sends; each send is still authorised on its own topic.
    numbered = {"messages": [{"body": "x"}], **ids.json(), "sequence": 0}
    assert_problem(as_("mallory").post(path("v1", "topics", "ORDER_TOPIC", "messages"), json=numbered), 403, "ACCESS_DENIED")
    assert as_("order").post(path("v1", "topics", "ORDER_TOPIC", "messages"), json=numbered).status_code == 200


def test_a_message_s_journey_and_a_key_s_messages_are_for_its_topic_s_publishers_subscribers_and_admins_only(as_):
    admin = as_("admin")
    admin.post("/v1/topics", json={"name": "ORDER_TOPIC", "queues": 2})  # may exist already: either way it is there
    sent = as_("order").post(path("v1", "topics", "ORDER_TOPIC", "messages"),
                             json={"messages": [{"body": "order 9", "keys": ["order-9"]}]})
    sent.raise_for_status()
    msg_id = sent.json()["results"][0]["msg_id"]
    for reader in ("admin", "credit", "order"):  # its producer looks up what it sent (a journey holds no body)
        assert as_(reader).get(path("v1", "messages", msg_id)).json()["message"]["msg_id"] == msg_id
        assert [m["msg_id"] for m in as_(reader).get("/v1/messages", params={"key": "order-9"}).json()["messages"]] == [msg_id]
    stranger = as_("mallory")  # as if there were none: no existence leaks either
    assert_problem(stranger.get(path("v1", "messages", msg_id)), 404, "MESSAGE_NOT_FOUND")
    assert_problem(stranger.get(path("v1", "messages", msg_id), params={"topic": "ORDER_TOPIC"}), 404, "MESSAGE_NOT_FOUND")
    assert stranger.get("/v1/messages", params={"key": "order-9"}).json()["messages"] == []
    assert stranger.get("/v1/messages", params={"key": "order-9", "topic": "ORDER_TOPIC"}).json()["messages"] == []
    assert as_(None).get(path("v1", "messages", msg_id)).status_code == 401
