"""Transactions across a failover: the new leader knows the committed ones and checks back the pending ones."""

from __future__ import annotations

import httpx
import pytest

from tests.support.broker_set import BrokerSet
from tests.support.check_server import CheckServer
from tests.support.set_load import read_back
from tests.support.waiting import wait_for

pytestmark = pytest.mark.slow
FAST_CHECKS = {"HALFMQ_BROKER_TRANSACTION_TIMEOUT": "1.0", "HALFMQ_BROKER_TRANSACTION_CHECK_INTERVAL": "0.5"}
SET_ENV = FAST_CHECKS  # conftest's broker_set starts its nodes with these


def _half(url: str, body: str) -> dict:
    answer = httpx.post(f"{url}/v1/transactions", json={"producer_group": "pg", "topic": "ORDERS", "message": {"body": body}}, timeout=10)
    answer.raise_for_status()
    assert answer.json()["status"] == "SEND_OK"
    return answer.json()


def test_the_new_leader_keeps_ended_transactions_and_checks_back_the_pending_half(broker_set: BrokerSet, checks: CheckServer) -> None:
    leader = broker_set.leader()
    url = broker_set.nodes[leader].url
    httpx.post(f"{url}/v1/topics", json={"name": "ORDERS", "queues": 1}, timeout=10).raise_for_status()
    committed = _half(url, "committed")
    end = httpx.post(f"{url}/v1/transactions/{committed['transaction_id']}/end", json={"producer_group": "pg", "state": "commit"}, timeout=10)
    assert end.status_code == 200, end.text
    pending = _half(url, "pending")  # no end: the producer "crashed"
    broker_set.nodes[leader].kill9()
    new = broker_set.leader(timeout=30, not_=leader)
    new_url = broker_set.nodes[new].url
    checks.answer_state("commit")
    heartbeat = {"producer_group": "pg", "client_id": "c1", "check_url": checks.url}
    assert httpx.post(f"{new_url}/v1/producers/heartbeat", json=heartbeat, timeout=10).status_code == 200
    wait_for(lambda: httpx.get(f"{new_url}/v1/transactions/{pending['transaction_id']}", timeout=5).json()["state"] == "committed", timeout=30)
    assert checks.calls_for(pending["transaction_id"])
    assert not checks.calls_for(committed["transaction_id"])  # the new leader knew it was ended
    again = httpx.post(f"{new_url}/v1/transactions/{committed['transaction_id']}/end", json={"producer_group": "pg", "state": "commit"}, timeout=10)
    assert again.status_code == 200  # idempotent across the failover: no second final message
    assert read_back(new_url, "ORDERS") == {"committed": 1, "pending": 1}
