"""Message groups (FIFO) over HTTP against one real broker process: the wire field, its checks, and its queue."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import crc32c
import httpx
import pytest

from ..http_helpers import path, read_all, receive, send
from .support import ModuleBrokerFactory, assert_problem

QUEUES = 8
_names = itertools.count()


@pytest.fixture(scope="module")
def client(module_broker_factory: ModuleBrokerFactory) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=module_broker_factory().url, timeout=15) as c:
        yield c


def fresh_topic(client: httpx.Client) -> str:
    name = f"GROUPS-{next(_names)}"
    client.post("/v1/topics", json={"name": name, "queues": QUEUES}).raise_for_status()
    return name


def send_one(client: httpx.Client, topic: str, message: dict) -> httpx.Response:
    return client.post(path("v1", "topics", topic, "messages"), json={"messages": [message]})


def test_every_message_of_one_group_sent_plain_as_a_half_or_in_a_producer_transaction_has_the_same_queue_id(
        client: httpx.Client) -> None:
    topic = fresh_topic(client)
    for n in range(3):
        send(client, topic, f"plain-{n}", message_group="user-1")
        send(client, topic, f"other-{n}", message_group=f"user-{n + 2}")
    for n in range(3):
        half = client.post("/v1/transactions", json={"producer_group": "pg", "topic": topic,
                                                     "message": {"body": f"half-{n}", "message_group": "user-1"}})
        half.raise_for_status()
        client.post(path("v1", "transactions", half.json()["transaction_id"], "end"),
                    json={"producer_group": "pg", "state": "commit"}).raise_for_status()
    tid = path("v1", "transactional-ids", f"groups-{topic}")
    ids = client.post(f"{tid}/init", json={}).json()
    who = {"producer_id": ids["producer_id"], "epoch": ids["epoch"]}
    client.post(f"{tid}/begin", json={**who, "sequence": 0}).raise_for_status()
    client.post(f"{tid}/messages", json={**who, "sequence": 1, "messages": [
        {"topic": topic, "body": f"txn-{n}", "message_group": "user-1"} for n in range(3)]}).raise_for_status()
    client.post(f"{tid}/commit", json=who).raise_for_status()

    stored = [m for q in range(QUEUES) for m in read_all(client, topic, q)]
    mine = [m for m in stored if m.get("message_group") == "user-1"]
    assert sorted(m["body"] for m in mine) == sorted(f"{kind}-{n}" for kind in ("plain", "half", "txn") for n in range(3))
    assert {m["queue_id"] for m in mine} == {crc32c.crc32c(b"user-1") % QUEUES}
    assert all("__SHARDINGKEY" not in m["properties"] for m in stored)  # shown as message_group, not as a property


def test_a_delivery_names_its_message_group_and_a_message_without_one_leaves_it_out(client: httpx.Client) -> None:
    topic = fresh_topic(client)
    send(client, topic, "grouped", message_group="g")
    send(client, topic, "plain")
    got = {m["body"]: m for m in receive(client, "c", topic)}
    assert got["grouped"]["message_group"] == "g"
    assert "message_group" not in got["plain"]


def test_the_second_message_of_a_group_is_delivered_only_after_the_first_is_acked(client: httpx.Client) -> None:
    topic = fresh_topic(client)
    send(client, topic, "first", "second", message_group="g")
    [first] = receive(client, "c", topic)
    assert receive(client, "c", topic) == []
    client.post(path("v1", "consumer-groups", "c", "topics", topic, "ack"),
                json={"receipt_handles": [first["receipt_handle"]]}).raise_for_status()
    assert [m["body"] for m in receive(client, "c", topic)] == ["second"]


@pytest.mark.parametrize("group", ["", "x" * 65, "é" * 33, "bell\x07", "line\nbreak", "c1\x85"])
def test_a_message_group_outside_rocketmqs_rule_is_invalid_message_group(client: httpx.Client, group: str) -> None:
    assert_problem(send_one(client, "GROUPS-BAD", {"body": "x", "message_group": group}), 400, "INVALID_MESSAGE_GROUP")


def test_a_message_group_of_64_bytes_is_accepted(client: httpx.Client) -> None:
    assert send_one(client, "GROUPS-OK", {"body": "x", "message_group": "é" * 32}).status_code == 200


@pytest.mark.parametrize("extra", [{"sharding_key": "another"}, {"queue_id": 0}])
def test_a_sharding_key_or_queue_id_that_would_pick_another_queue_is_invalid_request(client: httpx.Client,
                                                                                    extra: dict) -> None:
    assert_problem(send_one(client, "GROUPS-BAD", {"body": "x", "message_group": "g", **extra}), 400, "INVALID_REQUEST")


def test_a_sharding_key_equal_to_the_message_group_is_accepted(client: httpx.Client) -> None:
    assert send_one(client, "GROUPS-OK", {"body": "x", "message_group": "g", "sharding_key": "g"}).status_code == 200


def test_a_raw_shardingkey_property_is_reserved_property(client: httpx.Client) -> None:
    assert_problem(send_one(client, "GROUPS-BAD", {"body": "x", "properties": {"__SHARDINGKEY": "g"}}), 400,
                   "RESERVED_PROPERTY")
