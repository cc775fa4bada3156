"""ack=quorum answers SLAVE_NOT_AVAILABLE without a majority in sync and FLUSH_SLAVE_TIMEOUT when replicas are too slow;
ack=leader answers after the leader's own fsync."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import httpx
import pytest

from tests.support.broker_set import BrokerSet
from tests.support.etcd import EtcdProcess
from tests.support.waiting import wait_for

pytestmark = pytest.mark.slow


def _status(url: str) -> str:
    answer = httpx.post(f"{url}/v1/topics/orders/messages", json={"messages": [{"body": "x"}]}, timeout=15)
    assert answer.status_code == 200, answer.text
    return str(answer.json()["results"][0]["status"])


def _lone_leader(brokers: BrokerSet) -> str:
    node = brokers.nodes["n1"]
    node.start(timeout=60)
    wait_for(lambda: (v := brokers.view("n1")) and v["writable"], timeout=30)
    return node.url


def test_a_lone_node_of_a_set_of_three_answers_slave_not_available_with_ack_quorum(etcd: EtcdProcess, tmp_path: Path) -> None:
    brokers = BrokerSet(etcd, tmp_path)
    try:
        assert _status(_lone_leader(brokers)) == "SLAVE_NOT_AVAILABLE"
    finally:
        brokers.stop()


def test_with_ack_leader_a_lone_node_acknowledges_after_its_own_fsync(etcd: EtcdProcess, tmp_path: Path) -> None:
    brokers = BrokerSet(etcd, tmp_path, env={"HALFMQ_BROKER_ACK": "leader"})
    try:
        assert _status(_lone_leader(brokers)) == "SEND_OK"
    finally:
        brokers.stop()


def test_replicas_that_do_not_answer_in_time_give_flush_slave_timeout(etcd: EtcdProcess, tmp_path: Path) -> None:
    brokers = BrokerSet(etcd, tmp_path, env={"HALFMQ_BROKER_SYNC_FLUSH_TIMEOUT": "1.0"}).start()
    paused: list[int] = []
    try:
        leader = brokers.leader()
        url = brokers.nodes[leader].url
        assert _status(url) == "SEND_OK"
        for node_id, node in brokers.nodes.items():
            if node_id != leader and node.pid:
                os.kill(node.pid, signal.SIGSTOP)
                paused.append(node.pid)
        assert _status(url) == "FLUSH_SLAVE_TIMEOUT"  # stored and fsynced on the leader, not on a majority
    finally:
        for pid in paused:
            os.kill(pid, signal.SIGCONT)
        brokers.stop()
