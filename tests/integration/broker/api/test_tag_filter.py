"""A receive's tag filter over HTTP against a real broker process (RocketMQ's tag subscription, issue 45): only the wanted
tags are delivered to the group, the others are consumed for it and never delivered to it later, other groups are not
touched, and a filter past its bounds is a 400 INVALID_TAG_FILTER that delivers nothing."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from halfmq.wire import MAX_TAG_LENGTH
from halfmq.wire.messages import MAX_FILTER_TAGS
from tests.support.processes import BrokerProcess

from ..http_helpers import path
from .support import ModuleBrokerFactory


@pytest.fixture(scope="module")
def client(module_broker_factory: ModuleBrokerFactory) -> Iterator[httpx.Client]:
    broker: BrokerProcess = module_broker_factory()
    with httpx.Client(base_url=broker.url, timeout=15) as c:
        yield c


def _send(client: httpx.Client, topic: str, *tags: str) -> None:
    client.post("/v1/topics", json={"name": topic, "queues": 1}).raise_for_status()
    messages = [{"body": f"{tag}-{i}", "tag": tag} for i, tag in enumerate(tags)]
    client.post(path("v1", "topics", topic, "messages"), json={"messages": messages}).raise_for_status()


def _receive(client: httpx.Client, group: str, topic: str, **request: object) -> httpx.Response:
    return client.post(path("v1", "consumer-groups", group, "topics", topic, "receive"), json={"invisible_seconds": 30, **request})


def _bodies(answer: httpx.Response) -> list[str]:
    assert answer.status_code == 200, answer.text
    return [m["body"] for m in answer.json()["messages"]]


def test_a_receive_with_rocketmqs_tag_expression_gets_only_those_tags_and_the_group_never_gets_the_others(client: httpx.Client) -> None:
    _send(client, "filtered", "created", "paid", "shipped", "created", "refunded")
    assert _bodies(_receive(client, "billing", "filtered", tags="created || paid")) == ["created-0", "paid-1", "created-3"]
    assert [m["tag"] for m in _receive(client, "audit", "filtered", tags=["shipped", "refunded"]).json()["messages"]] == [
        "shipped", "refunded"]
    assert _bodies(_receive(client, "billing", "filtered", wait_seconds=2)) == []  # consumed for billing: not delivered later
    assert _bodies(_receive(client, "everyone", "filtered", tags="*")) == ["created-0", "paid-1", "shipped-2", "created-3", "refunded-4"]


def test_a_long_poll_with_a_filter_passes_over_what_it_does_not_want_and_waits_for_its_tag(client: httpx.Client) -> None:
    _send(client, "waiting", *["noise"] * 40)
    assert _bodies(_receive(client, "picky", "waiting", tags=["signal"], max_messages=4, wait_seconds=1)) == []
    client.post(path("v1", "topics", "waiting", "messages"), json={"messages": [{"body": "it", "tag": "signal"}]}).raise_for_status()
    assert _bodies(_receive(client, "picky", "waiting", tags=["signal"], max_messages=4, wait_seconds=5)) == ["it"]


def test_a_filter_past_its_bounds_is_a_400_invalid_tag_filter_and_delivers_nothing(client: httpx.Client) -> None:
    _send(client, "bounded", "a")
    for tags in (" || ".join(f"t{i}" for i in range(MAX_FILTER_TAGS + 1)), ["x" * (MAX_TAG_LENGTH + 1)]):
        refused = _receive(client, "g", "bounded", tags=tags)
        assert refused.status_code == 400 and refused.json()["code"] == "INVALID_TAG_FILTER", refused.text
    assert _bodies(_receive(client, "g", "bounded")) == ["a-0"]
