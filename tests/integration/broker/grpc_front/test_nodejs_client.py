"""Apache's rocketmq-client-nodejs (from npm, pinned by nodejs/package-lock.json) runs the same flow against halfmq.

Node comes from Debian's `nodejs` (bin/setup installs it); `npm ci` fills nodejs/node_modules the first time.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from .conftest import NODE_DIR, RmqBroker

pytestmark = pytest.mark.slow


def run(node_client: Path, broker: RmqBroker, scenario: str) -> Any:
    """flow.js's ``scenario`` against ``broker``: the JSON line it prints last."""
    done = subprocess.run(["node", str(node_client), broker.endpoint, scenario], cwd=NODE_DIR, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_nodejs_client_sends_transactionally_is_checked_back_and_consumes(rmq_broker: RmqBroker, node_client: Path) -> None:
    result = run(node_client, rmq_broker, "transactions")
    assert result["received"] == ["node-commit", "node-left-open", "node-plain"]  # the rollback never delivered
    assert result["asked"] == ["node-left-open"]  # the open transaction was checked back over telemetry
    assert result["plainId"]


def test_two_fifo_simple_consumers_of_the_nodejs_client_keep_each_of_3_groups_in_send_order(rmq_broker: RmqBroker,
                                                                                         node_client: Path) -> None:
    result = run(node_client, rmq_broker, "fifo")
    groups = ("user-1", "user-2", "user-3")
    assert {g: [seq for group, seq, _ in result["seen"] if group == g] for g in groups} == {g: list(range(6)) for g in groups}
    assert all(told == group for group, _, told in result["seen"])
    assert all(len(set(batch)) == len(batch) for batch in result["batches"])  # one message of a group at a time


def test_a_delay_message_of_the_nodejs_client_arrives_no_earlier_than_its_delivery_timestamp(rmq_broker: RmqBroker,
                                                                                           node_client: Path) -> None:
    result = run(node_client, rmq_broker, "delay")
    delayed = result["arrivals"]["payment due"]
    assert delayed["at"] >= result["due"]
    assert delayed["deliveryTimestamp"] == result["due"]  # in ms: the Node.js client sends milliseconds
    assert "paid" in result["arrivals"]
