"""/metrics after real sends: lag per group and queue, messages in per topic, transactions by age."""

from __future__ import annotations

import httpx
from prometheus_client.parser import text_string_to_metric_families

from .http_helpers import receive, send


def samples(client: httpx.Client) -> dict[tuple[str, tuple], float]:
    text = client.get("/metrics").text
    return {(s.name, tuple(sorted(s.labels.items()))): s.value for f in text_string_to_metric_families(text) for s in f.samples}


def test_lag_in_flight_messages_in_and_pending_transactions_show_on_metrics(broker) -> None:
    with httpx.Client(base_url=broker.url, timeout=15) as client:
        client.post("/v1/topics", json={"name": "PAY", "queues": 1}).raise_for_status()
        send(client, "PAY", "a", "b", "c")
        receive(client, "billing", "PAY", n=1)
        client.post("/v1/transactions", json={"producer_group": "pg", "topic": "PAY", "message": {"body": "half"}}).raise_for_status()
        got = samples(client)
    assert got[("halfmq_messages_in_total", (("topic", "PAY"),))] == 3
    assert got[("halfmq_consumer_lag_messages", (("consumer_group", "billing"), ("queue_id", "0"), ("topic", "PAY")))] == 3
    assert got[("halfmq_consumer_inflight_messages", (("consumer_group", "billing"), ("topic", "PAY")))] == 1
    assert got[("halfmq_consumer_ready_messages", (("consumer_group", "billing"), ("topic", "PAY")))] == 2
    assert got[("halfmq_half_messages", (("age", "le_10s"),))] == 1
    assert got[("halfmq_consumer_group_number", ())] == 1
