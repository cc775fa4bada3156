"""Issue 30 item 1 against a real broker with auth on: a producer id is its owner's, whichever route numbers a send.

mallory may publish only on ``topic:MALLORY_*`` (tests/support/auth.py). The order service gets a producer id
(``POST /v1/producer-ids``, or its transactional id's ``init``) and numbers its sends with it; mallory, who learns
or guesses the id, numbers her own sends with it. Before the fix her send took the number, and the order service's
later send with the same number was answered ``duplicate: true`` with her message's ids and stored nothing.
Plus, with auth off, item 1's kind/topic binding and item 6: a number is answered from the window only for the
same request; a different one is 409 SEQUENCE_NUMBER_REUSED (not a 500, not another topic's stored answer).
"""

from __future__ import annotations

import httpx
import pytest

from tests.integration.broker.api.support import assert_problem
from tests.support.processes import BrokerProcess

from .http_helpers import path, read_all

HALVES = "/v1/transaction-batches/half"


def send(client: httpx.Client, topic: str, ids: dict, sequence: int, body: str) -> httpx.Response:
    return client.post(path("v1", "topics", topic, "messages"), json={**ids, "sequence": sequence, "messages": [{"body": body}]})


def half(group: str, topic: str, ids: dict, sequence: int, body: str) -> dict:
    return {"producer_group": group, "topic": topic, "message": {"body": body}, **ids, "sequence": sequence}


def bodies(admin: httpx.Client, topic: str) -> list[str]:
    if admin.get(path("v1", "topics", topic)).status_code == 404:
        return []
    return [m["body"] for m in read_all(admin, topic, 0)]


def pending_bodies(admin: httpx.Client) -> list[str]:
    return sorted(t["message"]["body"] for t in admin.get("/v1/transactions").json()["transactions"])


def new_ids(client: httpx.Client) -> dict:
    resp = client.post("/v1/producer-ids", json={})
    assert resp.status_code == 201, resp.text
    return resp.json()


@pytest.fixture
def topics(as_) -> None:
    for name in ("ORDER_TOPIC", "MALLORY_T"):
        as_("admin").post("/v1/topics", json={"name": name, "queues": 1}).raise_for_status()


def test_another_principal_numbering_sends_with_the_order_services_producer_id_is_refused_and_the_order_is_stored(as_, topics):
    order, mallory, admin = as_("order"), as_("mallory"), as_("admin")
    ids = new_ids(order)
    assert_problem(send(mallory, "MALLORY_T", ids, 1, "stolen number"), 403, "PRODUCER_ID_NOT_OWNED")
    placed = send(order, "ORDER_TOPIC", ids, 1, "order 1")
    assert placed.status_code == 200, placed.text
    assert "duplicate" not in placed.json() and placed.json()["results"][0]["topic"] == "ORDER_TOPIC"
    assert bodies(admin, "ORDER_TOPIC") == ["order 1"] and bodies(admin, "MALLORY_T") == []
    # The reverse: repeating the victim's number reads none of its stored answers.
    leak = send(mallory, "MALLORY_T", ids, 1, "what did order 1 get?")
    assert_problem(leak, 403, "PRODUCER_ID_NOT_OWNED")
    assert placed.json()["results"][0]["msg_id"] not in leak.text
    assert bodies(admin, "MALLORY_T") == []


def test_another_principal_cannot_number_a_half_with_the_order_services_producer_id_single_or_batched(as_, topics):
    order, mallory, admin = as_("order"), as_("mallory"), as_("admin")
    ids = new_ids(order)
    assert_problem(mallory.post("/v1/transactions", json=half("mallory_group", "MALLORY_T", ids, 0, "stolen")),
                   403, "PRODUCER_ID_NOT_OWNED")
    stolen = mallory.post(HALVES, json={"items": [half("mallory_group", "MALLORY_T", ids, 1, "stolen too")]})
    assert stolen.status_code == 200 and stolen.json()["results"][0]["problem"]["code"] == "PRODUCER_ID_NOT_OWNED"
    assert stolen.json()["results"][0]["problem"]["status"] == 403
    single = order.post("/v1/transactions", json=half("order_producer_group", "ORDER_TOPIC", ids, 0, "order 1"))
    assert single.status_code == 200 and "duplicate" not in single.json(), single.text
    batched = order.post(HALVES, json={"items": [half("order_producer_group", "ORDER_TOPIC", ids, 1, "order 2")]})
    [item] = batched.json()["results"]
    assert item["status"] == "SEND_OK" and "duplicate" not in item, item
    assert pending_bodies(admin) == ["order 1", "order 2"]
    # The reverse: mallory repeating the order service's numbers learns none of its transaction ids.
    for sequence in (0, 1):
        leak = mallory.post("/v1/transactions", json=half("mallory_group", "MALLORY_T", ids, sequence, "?"))
        assert_problem(leak, 403, "PRODUCER_ID_NOT_OWNED")
        assert single.json()["transaction_id"] not in leak.text and item["transaction_id"] not in leak.text
    assert pending_bodies(admin) == ["order 1", "order 2"]


def test_a_transactional_ids_producer_id_numbers_only_its_owners_sends(as_, topics):
    order, mallory, admin = as_("order"), as_("mallory"), as_("admin")
    init = order.post(path("v1", "transactional-ids", "order-tx", "init"), json={})
    assert init.status_code == 200, init.text
    ids = {"producer_id": init.json()["producer_id"], "epoch": init.json()["epoch"]}
    assert_problem(send(mallory, "MALLORY_T", ids, 0, "stolen"), 403, "PRODUCER_ID_NOT_OWNED")
    assert_problem(mallory.post("/v1/transactions", json=half("mallory_group", "MALLORY_T", ids, 1, "stolen")),
                   403, "PRODUCER_ID_NOT_OWNED")
    placed = send(order, "ORDER_TOPIC", ids, 0, "order 1")
    assert placed.status_code == 200 and "duplicate" not in placed.json(), placed.text
    assert bodies(admin, "ORDER_TOPIC") == ["order 1"] and bodies(admin, "MALLORY_T") == []


def test_a_transactional_ids_steps_are_refused_to_another_principal_allowed_on_it_until_it_initialises_the_id_itself(as_, topics):
    order, admin = as_("order"), as_("admin")  # admin may publish on transactional-id:order-tx too
    init = order.post(path("v1", "transactional-ids", "order-tx", "init"), json={}).json()
    ids = {"producer_id": init["producer_id"], "epoch": init["epoch"]}
    step = lambda who, verb, body: who.post(path("v1", "transactional-ids", "order-tx", verb), json={**ids, **body})  # noqa: E731
    assert step(order, "begin", {"sequence": 0}).status_code == 200
    forged = {"sequence": 1, "messages": [{"topic": "ORDER_TOPIC", "body": "forged"}]}
    assert_problem(step(admin, "messages", forged), 403, "PRODUCER_ID_NOT_OWNED")
    assert_problem(step(admin, "commit", {}), 403, "PRODUCER_ID_NOT_OWNED")
    assert step(order, "messages", {"sequence": 1, "messages": [{"topic": "ORDER_TOPIC", "body": "order 1"}]}).status_code == 200
    assert step(order, "commit", {}).status_code == 200
    assert bodies(admin, "ORDER_TOPIC") == ["order 1"]
    taken = admin.post(path("v1", "transactional-ids", "order-tx", "init"), json={}).json()  # a new instance: fences
    assert (taken["producer_id"], taken["epoch"]) == (ids["producer_id"], ids["epoch"] + 1)
    assert_problem(step(order, "begin", {"sequence": 0}), 403, "PRODUCER_ID_NOT_OWNED")


def test_producer_ids_are_random_and_stay_bound_to_their_owner_across_kill_9(secured, as_, topics):
    broker, _ = secured
    order, mallory, admin = as_("order"), as_("mallory"), as_("admin")
    handed = [new_ids(order)["producer_id"] for _ in range(3)]
    assert len(set(handed)) == 3 and max(handed) > 2**32  # 63 random bits, not a counter from 1
    assert all(abs(a - b) > 1 for a in handed for b in handed if a != b)
    ids = {"producer_id": handed[0], "epoch": 0}
    assert send(order, "ORDER_TOPIC", ids, 0, "order 1").status_code == 200
    broker.kill9()
    broker.start()
    assert_problem(send(mallory, "MALLORY_T", ids, 1, "stolen after restart"), 403, "PRODUCER_ID_NOT_OWNED")
    again = send(order, "ORDER_TOPIC", ids, 0, "order 1")
    assert again.status_code == 200 and again.json()["duplicate"] is True  # the owner's retry, read back from the log
    assert send(order, "ORDER_TOPIC", ids, 1, "order 2").status_code == 200
    assert bodies(admin, "ORDER_TOPIC") == ["order 1", "order 2"] and bodies(admin, "MALLORY_T") == []


# --- auth off: the number is bound to the request it was used for -----------------------------------------

@pytest.fixture
def client(broker: BrokerProcess):
    with httpx.Client(base_url=broker.url, timeout=15) as c:
        for name in ("PLAIN", "OTHER"):
            c.post("/v1/topics", json={"name": name, "queues": 1}).raise_for_status()
        yield c


def test_a_half_reusing_a_number_a_plain_send_used_is_409_not_a_500_nor_the_plain_sends_answer(client):
    ids = new_ids(client)
    plain = send(client, "PLAIN", ids, 0, "plain")
    assert plain.status_code == 200
    reused = client.post("/v1/transactions", json=half("pg", "OTHER", ids, 0, "half"))
    body = assert_problem(reused, 409, "SEQUENCE_NUMBER_REUSED")
    assert plain.json()["results"][0]["msg_id"] not in reused.text and body["sequence"] == 0
    assert client.get("/v1/transactions").json()["transactions"] == []


def test_a_plain_send_reusing_a_number_for_another_topic_is_409_not_the_other_topics_answer(client):
    ids = new_ids(client)
    first = send(client, "PLAIN", ids, 0, "to PLAIN")
    assert first.status_code == 200
    assert_problem(send(client, "OTHER", ids, 0, "to OTHER"), 409, "SEQUENCE_NUMBER_REUSED")
    half_first = client.post("/v1/transactions", json=half("pg", "OTHER", ids, 1, "half"))
    assert half_first.status_code == 200
    assert_problem(send(client, "OTHER", ids, 1, "plain"), 409, "SEQUENCE_NUMBER_REUSED")  # a plain send reusing a half's
    assert_problem(client.post("/v1/transactions", json=half("other_group", "OTHER", ids, 1, "half")), 409, "SEQUENCE_NUMBER_REUSED")
    assert send(client, "PLAIN", ids, 0, "to PLAIN").json()["duplicate"] is True  # the same request is still a repeat
    assert [m["body"] for m in read_all(client, "PLAIN", 0)] == ["to PLAIN"]
    assert read_all(client, "OTHER", 0) == []


def test_a_batch_answers_a_reused_number_in_its_own_item_and_keeps_the_items_it_wrote(client):
    ids = new_ids(client)
    assert send(client, "PLAIN", ids, 1, "plain").status_code == 200
    resp = client.post(HALVES, json={"items": [half("pg", "OTHER", ids, 0, "first"), half("pg", "OTHER", ids, 1, "reuses"),
                                               half("pg", "OTHER", ids, 2, "third")]})
    assert resp.status_code == 200, resp.text
    first, reused, third = resp.json()["results"]
    assert first["status"] == third["status"] == "SEND_OK"
    assert (reused["problem"]["status"], reused["problem"]["code"]) == (409, "SEQUENCE_NUMBER_REUSED")
    pending = {t["transaction_id"] for t in client.get("/v1/transactions").json()["transactions"]}
    assert pending == {first["transaction_id"], third["transaction_id"]}  # the caller learned every id it wrote


def test_the_kind_and_topic_of_a_number_survive_kill_9(broker: BrokerProcess, client):
    ids = new_ids(client)
    assert send(client, "PLAIN", ids, 0, "plain").status_code == 200
    assert client.post("/v1/transactions", json=half("pg", "OTHER", ids, 1, "half")).status_code == 200
    broker.kill9()
    broker.start()
    assert_problem(client.post("/v1/transactions", json=half("pg", "OTHER", ids, 0, "half")), 409, "SEQUENCE_NUMBER_REUSED")
    assert_problem(send(client, "OTHER", ids, 0, "plain"), 409, "SEQUENCE_NUMBER_REUSED")
    assert_problem(send(client, "OTHER", ids, 1, "plain"), 409, "SEQUENCE_NUMBER_REUSED")
    assert send(client, "PLAIN", ids, 0, "plain").json()["duplicate"] is True
    assert client.post("/v1/transactions", json=half("pg", "OTHER", ids, 1, "half")).json()["duplicate"] is True
