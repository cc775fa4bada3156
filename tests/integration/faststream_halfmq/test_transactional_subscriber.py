"""Consume-transform-produce in one decorator: a transactional subscriber's publishes and its ack commit together."""

from __future__ import annotations

from typing import Any

import pytest
from faststream_halfmq import HalfmqBroker
from faststream_halfmq.annotations import HalfmqMessage

from tests.integration.faststream_halfmq.conftest import Running, Seen
from tests.support.unique_names import unique

pytestmark = pytest.mark.parametrize("mode", ["real_broker"])


async def test_a_handlers_publishes_and_its_ack_commit_together(url: str, running: Running, seen: Seen) -> None:
    broker, orders, credits = HalfmqBroker(url), unique("ORDERS"), unique("CREDITS")

    @broker.subscriber(orders, group="credit", transactional_id=unique("credit"), wait_seconds=0.5)
    @broker.publisher(credits)
    async def credit(order: dict[str, Any]) -> dict[str, Any]:
        await broker.publish({"audit": order["id"]}, credits)
        return {"credited": order["id"]}

    @broker.subscriber(credits, group="ledger", wait_seconds=0.5)
    async def ledger(body: dict[str, Any]) -> None:
        seen.add(body)

    async with running(broker) as br:
        await br.publish({"id": "o-1"}, orders)
        await seen.at_least(2)
    assert sorted(map(str, seen.items)) == ["{'audit': 'o-1'}", "{'credited': 'o-1'}"]


async def test_a_failing_handlers_publishes_are_never_seen_and_its_message_comes_back(url: str, running: Running, seen: Seen) -> None:
    broker, orders, credits = HalfmqBroker(url), unique("ORDERS"), unique("CREDITS")

    @broker.subscriber(orders, group="credit", transactional_id=unique("credit"), wait_seconds=0.5)
    async def credit(order: dict[str, Any], message: HalfmqMessage) -> None:
        attempt = message.raw_message.delivery_attempt
        await broker.publish({"credited": order["id"], "attempt": attempt}, credits)
        if attempt == 1:
            raise RuntimeError("the database write failed after the publish")

    @broker.subscriber(credits, group="ledger", wait_seconds=0.5)
    async def ledger(body: dict[str, Any]) -> None:
        seen.add(body)

    async with running(broker) as br:
        await br.publish({"id": "o-1"}, orders)
        await seen.at_least(1)
        with pytest.raises(TimeoutError):
            await seen.at_least(2, within=2.0)  # nothing else: the first attempt's publish was aborted
    assert seen.items == [{"credited": "o-1", "attempt": 2}]
