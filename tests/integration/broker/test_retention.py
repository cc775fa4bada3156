"""Retention on a real broker process: a retention of one second, checked five times a second, small segments.

Today the state records pin holds the log from the state queue's first record (a restart replays them all, until state
snapshots land), so nothing goes here; what this shows through the process is that the loop runs under load and that
a half older than the retention still commits by check-back. Deletion past the pins is shown on a real runtime with
that pin left out (tests/unit/broker/test_runtime_retention.py).
"""

from __future__ import annotations

import time

import httpx

from tests.support.check_server import CheckServer
from tests.support.waiting import wait_for

from .http_helpers import receive

SHORT_RETENTION = {
    "HALFMQ_BROKER_RETENTION": "1s",
    "HALFMQ_BROKER_RETENTION_CHECK_INTERVAL": "0.2",
    "HALFMQ_BROKER_SEGMENT_BYTES": "4096",
    "HALFMQ_BROKER_TRANSACTION_TIMEOUT": "0.5",
    "HALFMQ_BROKER_TRANSACTION_CHECK_INTERVAL": "0.3",
    "HALFMQ_BROKER_CHECK_TIMEOUT": "1.0",
}


def metric(client: httpx.Client, name: str) -> float:
    for line in client.get("/metrics").text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"{name} is not in /metrics")


def test_a_half_older_than_the_retention_still_commits_by_check_back_after_retention_ran(start_broker, checks: CheckServer) -> None:
    broker = start_broker(SHORT_RETENTION)
    with httpx.Client(base_url=broker.url, timeout=15) as client:
        client.post("/v1/topics", json={"name": "ORDERS", "queues": 2}).raise_for_status()
        tx = client.post("/v1/transactions", json={"producer_group": "pg", "topic": "ORDERS", "message": {"body": "order 1"}}).json()
        for _ in range(40):  # ten segments and more after the half's
            client.post("/v1/topics/FILLER/messages", json={"messages": [{"body": "x" * 1000}]}).raise_for_status()
        segments = sorted((broker.data_dir / "commitlog").iterdir())
        time.sleep(2.0)  # the retention twice over, ten passes
        assert sorted((broker.data_dir / "commitlog").iterdir()) == segments  # held: a restart needs every state record
        assert metric(client, "halfmq_commit_log_start_offset") == 0
        checks.answer_state("commit")
        client.post("/v1/producers/heartbeat", json={"producer_group": "pg", "client_id": "c1", "check_url": checks.url}).raise_for_status()
        wait_for(lambda: client.get(f"/v1/transactions/{tx['transaction_id']}").json()["state"] == "committed")
        assert [m["body"] for m in receive(client, "billing", "ORDERS")] == ["order 1"]
