"""Where is my message, under attack (issue 42): against a real broker with auth on, one principal's messages can
neither bury another's message nor stand in for it, and a publish-only producer looks up what it sent.

Principals (tests/support/auth.py): ``order`` publishes to ORDER_TOPIC, ``credit`` subscribes to it, ``mallory``
publishes to and subscribes to MALLORY_* only, ``admin`` may do anything.
"""

from __future__ import annotations

import httpx
import pytest

from halfmq.client import AmbiguousMessageId, MessageNotFound, Producer
from tests.integration.broker.api.support import assert_problem
from tests.support.processes import BrokerProcess

from .http_helpers import path

ORDER, MALLORY = "ORDER_TOPIC", "MALLORY_T"


@pytest.fixture
def topics(as_):
    admin = as_("admin")
    for name in (ORDER, MALLORY):
        admin.post("/v1/topics", json={"name": name, "queues": 2}).raise_for_status()
    return as_


def send(client: httpx.Client, topic: str, messages: list[dict]) -> list[str]:
    ids: list[str] = []
    for i in range(0, len(messages), 100):
        resp = client.post(path("v1", "topics", topic, "messages"), json={"messages": messages[i:i + 100]})
        resp.raise_for_status()
        ids += [r["msg_id"] for r in resp.json()["results"]]
    return ids


def found(client: httpx.Client, key: str, **params: str | int) -> list[str]:
    resp = client.get("/v1/messages", params={"key": key, **params})
    resp.raise_for_status()
    return [m["msg_id"] for m in resp.json()["messages"]]


def journey(client: httpx.Client, msg_id: str, **params: str) -> httpx.Response:
    return client.get(path("v1", "messages", msg_id), params=params)


def test_300_messages_sent_with_another_principal_s_key_or_id_do_not_hide_its_message_from_its_reader_or_the_admin(
        topics) -> None:
    [victim] = send(topics("order"), ORDER, [{"body": "order 9", "keys": ["order-9"]}])
    mallory = topics("mallory")
    send(mallory, MALLORY, [{"body": f"squat {i}", "keys": ["order-9", victim]} for i in range(300)])  # newer, all of them
    assert found(topics("credit"), "order-9") == [victim]
    admin = topics("admin")
    assert victim in found(admin, "order-9")  # one of the 50 listed: every topic's newest first, then the next
    assert found(admin, "order-9", topic=ORDER) == [victim]
    assert victim not in found(mallory, "order-9") and len(found(mallory, "order-9")) == 50
    for reader in ("credit", "admin"):  # the id is not buried either: a key spelling it is not the message
        answer = journey(topics(reader), victim)
        assert answer.status_code == 200, answer.text
        assert answer.json()["message"]["topic"] == ORDER
    assert_problem(journey(mallory, victim), 404, "MESSAGE_NOT_FOUND")


def predicted_after(observed: str, count: int) -> list[str]:
    """The next ``count`` ids after ``observed``, were ids a per-process prefix and a counter (as they were)."""
    prefix, counter = observed[:16], int(observed[16:], 16)
    return [f"{prefix}{counter + k:016X}" for k in range(1, count + 1)]


def test_ids_the_broker_assigns_cannot_be_pre_claimed_to_read_another_principal_s_message_or_hide_it_from_its_reader(
        topics) -> None:
    mallory = topics("mallory")
    [observed] = send(mallory, MALLORY, [{"body": "tell me an id"}])
    claimed = predicted_after(observed, 399)
    send(mallory, MALLORY, [{"body": "claim", "properties": {"UNIQ_KEY": msg_id}} for msg_id in claimed])
    order = topics("order")
    half = order.post("/v1/transactions", json={"producer_group": "order_producer_group", "topic": ORDER,
                                                "message": {"body": '{"order_id": "o-1", "amount": "10"}'}})
    half.raise_for_status()
    [plain] = send(order, ORDER, [{"body": "order 10"}])
    credit = topics("credit")
    for msg_id in (half.json()["msg_id"], plain):
        assert msg_id not in claimed
        assert_problem(journey(mallory, msg_id), 404, "MESSAGE_NOT_FOUND")  # no topic, queue, offset, group or txid
        answer = journey(credit, msg_id)
        assert answer.status_code == 200, answer.text
        assert answer.json()["message"]["topic"] == ORDER
    assert journey(credit, half.json()["msg_id"]).json()["message"]["transaction_id"] == half.json()["transaction_id"]


def test_an_id_a_producer_copies_onto_its_own_topic_is_answered_as_two_messages_never_as_the_other_s_journey(topics) -> None:
    [victim] = send(topics("order"), ORDER, [{"body": "order 11", "keys": ["order-11"]}])
    mallory = topics("mallory")
    send(mallory, MALLORY, [{"body": "copy", "properties": {"UNIQ_KEY": victim}}])  # an id it learnt, reused
    assert journey(topics("credit"), victim).json()["message"]["topic"] == ORDER
    mine = journey(mallory, victim).json()
    assert mine["message"]["topic"] == MALLORY and all(e.get("topic") in (None, MALLORY) for e in mine["events"])
    admin = topics("admin")
    ambiguous = assert_problem(journey(admin, victim), 409, "AMBIGUOUS_MESSAGE_ID")
    assert ambiguous["topics"] == [MALLORY, ORDER]
    assert journey(admin, victim, topic=ORDER).json()["message"]["keys"] == ["order-11"]
    assert_problem(journey(mallory, victim, topic=ORDER), 404, "MESSAGE_NOT_FOUND")


def test_a_publish_only_producer_looks_up_the_journey_of_the_messages_it_sent(
        topics, secured: tuple[BrokerProcess, dict[str, str]]) -> None:
    order = topics("order")
    [sent] = send(order, ORDER, [{"body": "order 12", "keys": ["order-12"]}])
    answer = journey(order, sent)
    assert answer.status_code == 200, answer.text
    assert [e["kind"] for e in answer.json()["events"]] == ["sent"]
    assert found(order, "order-12") == [sent]
    broker, tokens = secured
    with Producer(broker.url, token=tokens["order"]) as producer:  # the SDK, as docs/sdk.md shows it
        result = producer.send(ORDER, "order 13", keys=["order-13"])
        [summary] = producer.find_messages("order-13")
        assert summary.msg_id == result.msg_id and summary.topic == ORDER
        assert producer.journey(result.msg_id, topic=result.topic).message.keys == ["order-13"]
        with pytest.raises(MessageNotFound):
            producer.journey(result.msg_id, topic=MALLORY)
    with Producer(broker.url, token=tokens["mallory"]) as stranger:
        with pytest.raises(MessageNotFound):
            stranger.journey(result.msg_id)
        stranger.send(MALLORY, "copy", properties={"UNIQ_KEY": result.msg_id})
    with Producer(broker.url, token=tokens["admin"]) as admin, pytest.raises(AmbiguousMessageId) as ambiguous:
        admin.journey(result.msg_id)
    assert ambiguous.value.extra["topics"] == [MALLORY, ORDER]
