"""The wrk-driven transaction load against a real broker: what it counts is what the broker committed."""

from __future__ import annotations

import shutil

import httpx
import pytest

from halfmq.bench import payloads, probe
from halfmq.bench.load import wrk_pairs
from tests.support.processes import BrokerProcess

pytestmark = pytest.mark.skipif(shutil.which("wrk") is None, reason="wrk is installed by bin/setup")

TOPIC, GROUP, CONCURRENCY = "WRK_PAIRS", "wrk_pairs_group", 8


def test_wrk_pairs_counts_only_transactions_the_broker_committed(broker: BrokerProcess) -> None:
    probe.create_topic(broker.url, TOPIC, 2)
    run = wrk_pairs(broker.url, payloads.half(GROUP, TOPIC), payloads.end(GROUP, "commit"), CONCURRENCY, 1.0)

    assert run.ops > 0 and run.errors == 0
    topic = httpx.get(f"{broker.url}/v1/topics/{TOPIC}").json()
    visible = sum(q["max_offset"] for q in topic["queues"])
    # wrk stops at its deadline: ends still in flight then were committed but not counted.
    assert run.ops <= visible <= run.ops + CONCURRENCY
    pending = httpx.get(f"{broker.url}/v1/transactions", params={"state": "pending"}).json()["count"]
    assert abs(pending - (run.extra["halves"] - run.ops)) <= CONCURRENCY  # halves whose end was never sent
