"""Where is my message: a message's journey and a search by key, against a real broker process."""

from __future__ import annotations

import httpx
import pytest

from tests.integration.broker.api.support import assert_problem
from tests.support.check_server import CheckServer
from tests.support.processes import BrokerProcess
from tests.support.waiting import wait_for

from .http_helpers import path, receive, send, settle

FAST_CHECKS = {"HALFMQ_BROKER_TRANSACTION_TIMEOUT": "0.5", "HALFMQ_BROKER_TRANSACTION_CHECK_INTERVAL": "0.3",
               "HALFMQ_BROKER_CHECK_TIMEOUT": "2.0", "HALFMQ_BROKER_RETRY_DELAYS": "0.2"}


@pytest.fixture
def client(start_broker):
    broker: BrokerProcess = start_broker(FAST_CHECKS)
    with httpx.Client(base_url=broker.url, timeout=15) as c:
        c.post("/v1/topics", json={"name": "ORDERS", "queues": 2}).raise_for_status()
        yield c


def journey(client: httpx.Client, msg_id: str) -> dict:
    resp = client.get(path("v1", "messages", msg_id))
    resp.raise_for_status()
    return resp.json()


def test_the_journey_of_an_order_s_message_shows_sent_checked_once_commit_delivered_twice_nack_db_down_acked(
        client: httpx.Client, checks: CheckServer) -> None:
    checks.answer_state("commit")
    client.post("/v1/producers/heartbeat", json={"producer_group": "pg", "client_id": "c1", "check_url": checks.url})
    resp = client.post("/v1/transactions", json={"producer_group": "pg", "topic": "ORDERS",
                                                  "message": {"body": "order 42", "keys": ["order-42"]}})
    resp.raise_for_status()
    tx = resp.json()
    wait_for(lambda: client.get(path("v1", "transactions", tx["transaction_id"])).json()["state"] == "committed")
    [first] = receive(client, "billing", "ORDERS", wait=5)
    nacked = client.post(path("v1", "consumer-groups", "billing", "topics", "ORDERS", "nack"),
                         json={"receipt_handles": [first["receipt_handle"]], "reason": "db down"})
    assert nacked.status_code == 200 and nacked.json()["results"][0]["status"] == "OK"
    [delivered] = receive(client, "billing", "ORDERS", wait=5)
    assert delivered["delivery_attempt"] == 2
    assert settle(client, "ack", "billing", "ORDERS", [delivered["receipt_handle"]]) == ["OK"]
    found = journey(client, tx["msg_id"])
    message = found["message"]
    assert (message["topic"], message["queue_offset"], message["keys"]) == ("ORDERS", delivered["queue_offset"], ["order-42"])
    assert message["producer_group"] == "pg" and message["transaction_id"] == tx["transaction_id"]
    assert message["state"] == "visible"
    kinds = [e["kind"] for e in found["events"]]
    assert kinds == ["half_stored", "checked", "committed", "delivered", "nacked", "delivered", "acked"]
    events = found["events"]
    assert events[1]["answer"] == "commit" and events[1]["group"] == "pg"
    assert [(e["group"], e.get("attempt")) for e in events[3:6]] == [("billing", 1), ("billing", 1), ("billing", 2)]
    assert events[4]["detail"] == "db down"
    assert events[-1]["group"] == "billing" and events[-1].get("detail") is None  # from its acks record, with its time
    times = [e["at_ms"] for e in found["events"] if e.get("at_ms")]
    assert times == sorted(times)


def test_find_by_a_key_lists_every_message_sent_with_it_newest_first(client: httpx.Client) -> None:
    sent = [send(client, "ORDERS", f"event {i}", keys=["user-7", f"event-{i}"])[0] for i in range(3)]
    send(client, "ORDERS", "someone else", keys=["user-8"])
    resp = client.get("/v1/messages", params={"key": "user-7"})
    resp.raise_for_status()
    assert [m["msg_id"] for m in resp.json()["messages"]] == [s["msg_id"] for s in reversed(sent)]
    assert client.get("/v1/messages", params={"key": "event-1"}).json()["messages"][0]["msg_id"] == sent[1]["msg_id"]


def test_an_unknown_message_is_404_message_not_found(client: httpx.Client) -> None:
    resp = client.get(path("v1", "messages", "no-such-id"))
    assert resp.status_code == 404 and resp.json()["code"] == "MESSAGE_NOT_FOUND"


def test_the_console_s_messages_page_shows_a_message_s_timeline_and_a_key_s_messages(client: httpx.Client) -> None:
    [sent] = send(client, "ORDERS", "order 44", keys=["order-44"])
    [delivered] = receive(client, "billing", "ORDERS", wait=5)
    settle(client, "ack", "billing", "ORDERS", [delivered["receipt_handle"]])
    page = client.get("/console/messages", params={"q": sent["msg_id"]})
    assert page.status_code == 200
    timeline = page.text[page.text.index('class="timeline"'):]
    assert timeline.index("sent") < timeline.index("delivered") < timeline.index("acked")
    listed = client.get("/console/messages", params={"q": "order-44"}).text
    assert sent["msg_id"] in listed and 'id="messages"' in listed
    assert "No message with id or key" in client.get("/console/messages/fragment", params={"q": "nothing"}).text


def test_an_id_on_two_topics_is_listed_by_the_console_and_each_journey_shown_by_its_topic(client: httpx.Client) -> None:
    client.post("/v1/topics", json={"name": "OTHER", "queues": 1}).raise_for_status()
    for topic in ("ORDERS", "OTHER"):
        send(client, topic, f"on {topic}", properties={"UNIQ_KEY": "chosen-by-a-producer"})
    assert_problem(client.get(path("v1", "messages", "chosen-by-a-producer")), 409, "AMBIGUOUS_MESSAGE_ID")
    listed = client.get("/console/messages", params={"q": "chosen-by-a-producer"}).text
    assert 'id="messages"' in listed and "?topic=ORDERS&amp;q=chosen-by-a-producer" in listed and "?topic=OTHER&amp;q=" in listed
    shown = client.get("/console/messages", params={"q": "chosen-by-a-producer", "topic": "OTHER"}).text
    assert 'class="timeline"' in shown and "on <strong>OTHER</strong>" in shown


def test_a_lookup_without_a_topic_past_lookup_topics_is_400_topic_required_and_with_it_is_answered(start_broker) -> None:
    broker: BrokerProcess = start_broker({"HALFMQ_BROKER_LOOKUP_TOPICS": "1"})
    with httpx.Client(base_url=broker.url, timeout=15) as c:
        [sent] = send(c, "ORDERS", "order 50", keys=["order-50"])
        send(c, "OTHER", "other")
        problem = assert_problem(c.get("/v1/messages", params={"key": "order-50"}), 400, "TOPIC_REQUIRED")
        assert problem["limit"] == 1
        assert_problem(c.get(path("v1", "messages", sent["msg_id"])), 400, "TOPIC_REQUIRED")
        assert [m["msg_id"] for m in c.get("/v1/messages", params={"key": "order-50", "topic": "ORDERS"}).json()["messages"]] \
            == [sent["msg_id"]]
        assert c.get(path("v1", "messages", sent["msg_id"]), params={"topic": "ORDERS"}).json()["message"]["topic"] == "ORDERS"
        assert "name the message&#39;s topic" in c.get("/console/messages", params={"q": "order-50"}).text
