"""Recalling a timed message on a real broker: before it is due it is never delivered, also across kill -9; once due
it is too late; a handle the broker's log does not back is a 400; a principal without the right to send gets a 403."""

from __future__ import annotations

import time

import httpx
import pytest

from tests.integration.broker.api.support import assert_problem

from ..http_helpers import path, read_all, send

TOPIC = "TIMED"


def recall(client: httpx.Client, topic: str, handle: object) -> httpx.Response:
    return client.post(path("v1", "topics", topic, "recall"), json={"recall_handle": handle})


def visible(client: httpx.Client, topic: str) -> list[str]:
    return [m["body"] for m in read_all(client, topic, 0)]


def wait_visible(client: httpx.Client, topic: str, body: str, timeout: float = 60.0) -> list[str]:
    deadline = time.monotonic() + timeout
    while body not in (seen := visible(client, topic)):
        assert time.monotonic() < deadline, f"{body} not delivered within {timeout} s: {seen}"
        time.sleep(0.1)
    return seen


@pytest.fixture
def client(broker) -> httpx.Client:
    with httpx.Client(base_url=broker.url, timeout=15) as c:
        c.post("/v1/topics", json={"name": TOPIC, "queues": 1}).raise_for_status()
        yield c


def test_a_message_recalled_before_it_is_due_is_never_delivered_also_after_kill_9(broker, client) -> None:
    recalled, kept = send(client, TOPIC, "recalled", "kept", delay_ms=3_000)
    assert recalled["recall_handle"] and recalled["queue_offset"] == -1
    answer = recall(client, TOPIC, recalled["recall_handle"])
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"msg_id": recalled["msg_id"], "topic": TOPIC, "deliver_at_ms": recalled["deliver_at_ms"]}
    again = recall(client, TOPIC, recalled["recall_handle"])
    assert again.status_code == 200 and again.json()["duplicate"] is True  # idempotent: nothing written twice
    broker.kill9()
    broker.start()
    assert wait_visible(client, TOPIC, "kept") == ["kept"]
    time.sleep(1.5)  # a release pass or more past the due time of both
    assert visible(client, TOPIC) == ["kept"]
    assert_problem(recall(client, TOPIC, kept["recall_handle"]), 409, "RECALL_TOO_LATE")


def test_a_recall_once_the_message_is_due_is_too_late_and_the_message_stays_delivered(client) -> None:
    [sent] = send(client, TOPIC, "due", delay_ms=200)
    wait_visible(client, TOPIC, "due")
    body = assert_problem(recall(client, TOPIC, sent["recall_handle"]), 409, "RECALL_TOO_LATE")
    assert body["deliver_at_ms"] == sent["deliver_at_ms"]
    assert visible(client, TOPIC) == ["due"]


def test_a_handle_the_broker_did_not_answer_is_a_400_and_changes_nothing(client) -> None:
    [sent] = send(client, TOPIC, "timed", delay_ms=60_000)
    client.post("/v1/topics", json={"name": "ELSEWHERE", "queues": 1}).raise_for_status()
    before = client.get(path("v1", "topics", "RMQ_SYS_WHEEL_TIMER")).json()
    for forged in ("not-a-handle", sent["recall_handle"][:-4] + "AAAA", "cjEfVElNRUQfMB8wHw"):
        assert_problem(recall(client, TOPIC, forged), 400, "INVALID_RECALL_HANDLE")
    assert_problem(recall(client, "ELSEWHERE", sent["recall_handle"]), 400, "INVALID_RECALL_HANDLE")
    for body in ({}, {"recall_handle": ""}, {"recall_handle": 7}, {"recall_handle": "x" * 2_000}):
        resp = client.post(path("v1", "topics", TOPIC, "recall"), json=body)
        assert resp.status_code == 400, resp.text
    assert client.get(path("v1", "topics", "RMQ_SYS_WHEEL_TIMER")).json() == before
    assert recall(client, TOPIC, sent["recall_handle"]).status_code == 200  # the real one still recalls


def test_only_a_principal_that_may_send_to_the_topic_recalls(as_) -> None:
    order = as_("order")
    [sent] = send(order, "ORDER_TOPIC", "timed", delay_ms=60_000)
    handle = sent["recall_handle"]
    assert_problem(recall(as_(None), "ORDER_TOPIC", handle), 401, "UNAUTHENTICATED")
    assert_problem(recall(as_("credit"), "ORDER_TOPIC", handle), 403, "ACCESS_DENIED")  # subscribing is not sending
    assert_problem(recall(as_("mallory"), "ORDER_TOPIC", handle), 403, "ACCESS_DENIED")
    assert_problem(recall(as_("mallory"), "MALLORY_TOPIC", handle), 400, "INVALID_RECALL_HANDLE")  # its own topic: not this handle
    answer = recall(order, "ORDER_TOPIC", handle)
    assert answer.status_code == 200 and "duplicate" not in answer.json()
