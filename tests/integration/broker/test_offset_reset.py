"""A consumer group's offset reset against a real broker process: the plan, the refusal, the restart, the rights."""

from __future__ import annotations

import time

import httpx
import pytest

from tests.support.processes import BrokerProcess

from .http_helpers import group_state, path, receive, send, settle


@pytest.fixture
def client(broker: BrokerProcess):
    with httpx.Client(base_url=broker.url, timeout=15) as c:
        yield c


def reset(client: httpx.Client, group: str, topic: str, **body) -> httpx.Response:
    return client.post(path("v1", "consumer-groups", group, "topics", topic, "reset-offsets"), json=body)


def consume_all(client: httpx.Client, group: str, topic: str) -> list[str]:
    got = receive(client, group, topic, n=64)
    assert settle(client, "ack", group, topic, [m["receipt_handle"] for m in got]) == ["OK"] * len(got)
    return [m["body"] for m in got]


def committed(client: httpx.Client, group: str, topic: str) -> list[int]:
    return [q["committed_offset"] for q in group_state(client, group)[topic]]


def filled(client: httpx.Client, topic: str, n: int = 5) -> None:
    client.post("/v1/topics", json={"name": topic, "queues": 1}).raise_for_status()
    send(client, topic, *[f"m{i}" for i in range(n)])


def test_a_dry_run_answers_the_plan_and_changes_nothing(client: httpx.Client) -> None:
    filled(client, "DRY")
    consume_all(client, "g", "DRY")
    answer = reset(client, "g", "DRY", to="earliest", dry_run=True)
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"group": "g", "topic": "DRY", "to": "earliest", "applied": False,
                             "queues": [{"queue_id": 0, "from_offset": 5, "to_offset": 0, "in_flight": 0}]}
    assert committed(client, "g", "DRY") == [5]
    assert receive(client, "g", "DRY") == []


def test_a_reset_to_earliest_delivers_the_queue_again(client: httpx.Client) -> None:
    filled(client, "AGAIN")
    consume_all(client, "g", "AGAIN")
    assert reset(client, "g", "AGAIN", to="earliest").json()["applied"] is True
    assert committed(client, "g", "AGAIN") == [0]
    assert consume_all(client, "g", "AGAIN") == [f"m{i}" for i in range(5)]


def test_a_reset_to_latest_skips_the_backlog(client: httpx.Client) -> None:
    filled(client, "SKIP")
    assert reset(client, "g", "SKIP", to="latest").json()["queues"][0]["to_offset"] == 5
    send(client, "SKIP", "after")
    assert consume_all(client, "g", "SKIP") == ["after"]


def test_a_reset_to_a_time_goes_to_the_first_message_stored_since(client: httpx.Client) -> None:
    filled(client, "TIMED", 3)
    time.sleep(0.05)
    since = int(time.time() * 1000)
    time.sleep(0.05)
    send(client, "TIMED", "late0", "late1")
    consume_all(client, "g", "TIMED")
    assert reset(client, "g", "TIMED", to="timestamp", timestamp_ms=since).json()["queues"][0]["to_offset"] == 3
    assert consume_all(client, "g", "TIMED") == ["late0", "late1"]
    assert reset(client, "g", "TIMED", to="duration", ago_ms=3_600_000).json()["queues"][0]["to_offset"] == 0
    assert reset(client, "g", "TIMED", to="offset", offset=4, queue_id=0).json()["queues"][0]["to_offset"] == 4


def test_deliveries_in_flight_refuse_the_reset_unless_forced(client: httpx.Client) -> None:
    filled(client, "HELD")
    held = receive(client, "g", "HELD", n=2)
    refused = reset(client, "g", "HELD", to="latest")
    assert refused.status_code == 409
    assert refused.headers["content-type"].startswith("application/problem+json")
    assert refused.json()["code"] == "GROUP_HAS_DELIVERIES_IN_FLIGHT"
    assert committed(client, "g", "HELD") == [0]
    forced = reset(client, "g", "HELD", to="offset", offset=3, force=True).json()
    assert forced["queues"] == [{"queue_id": 0, "from_offset": 0, "to_offset": 3, "in_flight": 2}]
    assert settle(client, "ack", "g", "HELD", [m["receipt_handle"] for m in held]) == ["EXPIRED", "EXPIRED"]
    assert consume_all(client, "g", "HELD") == ["m3", "m4"]


@pytest.mark.parametrize(("body", "status", "code"), [
    ({"to": "timestamp"}, 400, "INVALID_OFFSET_RESET"),
    ({"to": "duration"}, 400, "INVALID_OFFSET_RESET"),
    ({"to": "offset"}, 400, "INVALID_OFFSET_RESET"),
    ({"to": "earliest", "queue_id": 9}, 400, "INVALID_OFFSET_RESET"),
    ({"to": "yesterday"}, 400, "INVALID_REQUEST"),
    ({"to": "offset", "offset": -1}, 400, "INVALID_REQUEST"),
])
def test_bad_input_is_a_problem_and_changes_nothing(client: httpx.Client, body: dict, status: int, code: str) -> None:
    filled(client, "BAD")
    consume_all(client, "g", "BAD")
    answer = reset(client, "g", "BAD", **body)
    assert (answer.status_code, answer.json()["code"]) == (status, code), answer.text
    assert committed(client, "g", "BAD") == [5]


def test_an_unknown_topic_or_a_system_topic_is_refused(client: httpx.Client) -> None:
    assert reset(client, "g", "NOPE", to="earliest").json()["code"] == "TOPIC_NOT_FOUND"
    assert reset(client, "g", "HALFMQ_TXN_STATE", to="earliest").status_code == 403


@pytest.mark.parametrize("checkpointed", [False, True], ids=["kill-9-at-once", "kill-9-after-the-checkpoints"])
def test_a_reset_survives_kill_9(start_broker, checkpointed: bool) -> None:
    broker: BrokerProcess = start_broker({"HALFMQ_BROKER_OFFSET_FLUSH_INTERVAL": "0.2"})
    with httpx.Client(base_url=broker.url, timeout=15) as client:
        filled(client, "DURABLE")
        consume_all(client, "g", "DURABLE")
        time.sleep(1.0)  # the offsets file and the acks checkpoint say 5
        assert reset(client, "g", "DURABLE", to="offset", offset=1).status_code == 200
        if checkpointed:
            consume_all(client, "g2", "DURABLE")  # a later ack: the acks checkpoint is taken after the reset
            time.sleep(1.0)
    broker.kill9()
    broker.start()
    with httpx.Client(base_url=broker.url, timeout=15) as client:
        assert committed(client, "g", "DURABLE") == [1]
        assert consume_all(client, "g", "DURABLE") == ["m1", "m2", "m3", "m4"]
    broker.kill9()
    broker.start()
    with httpx.Client(base_url=broker.url, timeout=15) as client:  # the acks after the reset are kept as well
        assert committed(client, "g", "DURABLE") == [5]


def test_only_an_admin_of_the_group_may_reset_its_offsets(as_) -> None:
    admin, credit, mallory = as_("admin"), as_("credit"), as_("mallory")
    admin.post("/v1/topics", json={"name": "ORDER_TOPIC", "queues": 1}).raise_for_status()
    send(admin, "ORDER_TOPIC", "a", "b")
    consume_all(credit, "credit_group", "ORDER_TOPIC")
    for who in (credit, mallory):  # a subscriber of the group, a stranger
        refused = reset(who, "credit_group", "ORDER_TOPIC", to="earliest")
        assert (refused.status_code, refused.json()["code"]) == (403, "ACCESS_DENIED")
    assert reset(as_(None), "credit_group", "ORDER_TOPIC", to="earliest").status_code == 401
    assert committed(admin, "credit_group", "ORDER_TOPIC") == [2]
    assert reset(admin, "credit_group", "ORDER_TOPIC", to="earliest").status_code == 200
    assert committed(admin, "credit_group", "ORDER_TOPIC") == [0]
