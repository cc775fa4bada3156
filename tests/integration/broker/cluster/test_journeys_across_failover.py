"""Where is my message, on a broker set: a follower indexes the leader's records as it appends them."""

from __future__ import annotations

import httpx
import pytest

from tests.support.broker_set import BrokerSet

pytestmark = pytest.mark.slow


def test_after_kill_9_of_the_leader_the_new_leader_finds_a_message_by_key_and_shows_its_delivery_and_ack(
        broker_set: BrokerSet) -> None:
    leader = broker_set.leader()
    url = broker_set.nodes[leader].url
    sent = httpx.post(f"{url}/v1/topics/orders/messages", json={"messages": [{"body": "order 5", "keys": ["order-5"]}]},
                      timeout=10)
    assert sent.status_code == 200, sent.text
    msg_id = sent.json()["results"][0]["msg_id"]
    group = f"{url}/v1/consumer-groups/billing/topics/orders"
    [delivered] = httpx.post(f"{group}/receive", json={"max_messages": 1, "invisible_seconds": 30, "wait_seconds": 5},
                             timeout=15).json()["messages"]
    assert httpx.post(f"{group}/ack", json={"receipt_handles": [delivered["receipt_handle"]]}, timeout=10).status_code == 200
    broker_set.caught_up()
    broker_set.nodes[leader].kill9()
    new_url = broker_set.nodes[broker_set.leader(timeout=20, not_=leader)].url
    found = httpx.get(f"{new_url}/v1/messages", params={"key": "order-5"}, timeout=10).json()["messages"]
    assert [m["msg_id"] for m in found] == [msg_id]
    journey = httpx.get(f"{new_url}/v1/messages/{msg_id}", timeout=10).json()
    assert [(e["kind"], e.get("group")) for e in journey["events"]] == [("sent", None), ("delivered", "billing"), ("acked", "billing")]
