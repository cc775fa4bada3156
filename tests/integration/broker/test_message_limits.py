"""One message cannot freeze the broker: keys and properties are bounded in bytes before work grows with them.

The attack (issue 42): a message with 80k keys held the store's write lock on the event loop for 42 s (the key
index de-duplicated keys with a list). Now it is refused at once, and the worst message the limits allow leaves
every other request answered meanwhile.
"""

from __future__ import annotations

import httpx
import pytest

from tests.support.big_messages import MAX_KEYS, SLOW, many_keys, worst_allowed
from tests.support.liveness import HealthProbe

pytestmark = pytest.mark.slow

BIG_SEGMENTS = {"HALFMQ_BROKER_SEGMENT_BYTES": str(64 << 20)}  # the tests' 256 KiB segments hold no batch this large

def test_a_message_with_80k_keys_is_refused_at_once_and_stores_nothing(start_broker) -> None:
    broker = start_broker(BIG_SEGMENTS)
    with HealthProbe(broker.url) as probe, httpx.Client(base_url=broker.url, timeout=120) as client:
        refused = client.post("/v1/topics/orders/messages", json={"messages": [{"body": "x", "keys": many_keys(80_000)}]})
        one_too_many = client.post("/v1/topics/orders/messages", json={"messages": [{"body": "x", "keys": many_keys(MAX_KEYS + 1)}]})
        assert client.get("/v1/topics/orders").status_code == 404  # nothing stored: not even the topic auto-created
    assert (refused.status_code, refused.json()["code"]) == (413, "PROPERTIES_TOO_LARGE")
    assert (one_too_many.status_code, one_too_many.json()["code"]) == (400, "TOO_MANY_KEYS")
    assert one_too_many.json()["limit"] == MAX_KEYS
    assert probe.slowest < SLOW, f"/healthz waited {probe.slowest:.1f} s while the many-keys message was handled"


def test_the_worst_message_the_limits_allow_leaves_other_requests_answered(start_broker) -> None:
    broker = start_broker(BIG_SEGMENTS)
    batch = {"messages": [worst_allowed(512 * 1024) for _ in range(8)]}  # 8 x 544 KiB: every key and property limit
    with HealthProbe(broker.url) as probe, httpx.Client(base_url=broker.url, timeout=120) as client:
        for _ in range(10):
            sent = client.post("/v1/topics/orders/messages", json=batch)
            assert sent.status_code == 200, sent.text
        found = client.get("/v1/messages", params={"key": "k63-" + "x" * 200, "limit": 100}).json()["messages"]
    assert len(found) == 80  # each message is found by its last key
    assert probe.answered > 0 and probe.slowest < SLOW, f"/healthz waited {probe.slowest:.1f} s"
