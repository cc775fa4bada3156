"""A set delivers only what its in-sync replicas have on disk (the high watermark), on every read path.

Issue 30, item 5: consumers received and acked messages a set had not replicated,
and a leader change then cut them from the log. Here both followers are stopped
(SIGSTOP) and a message is sent with ``ack=leader``, so the leader alone has it
and acknowledges it; no consumer may see it until the followers have it. (The
RocketMQ gRPC front runs on a single broker only; its receive is the same
delivery service, see tests/unit/broker/store/test_visible_reads.py.)
"""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import httpx
import pytest

from tests.integration.broker.http_helpers import path, receive, send, settle
from tests.support.broker_set import BrokerSet
from tests.support.etcd import EtcdProcess

pytestmark = pytest.mark.slow

TOPIC = "bound_orders"


def _bodies(messages: list[dict]) -> list[str]:
    return [m["body"] for m in messages]


def _read_by_offset(client: httpx.Client) -> dict:
    answer = client.get(path("v1", "topics", TOPIC, "queues", 0, "messages"), params={"offset": 0, "max": 100})
    answer.raise_for_status()
    return answer.json()


def test_a_message_sent_while_both_followers_are_stopped_is_delivered_only_once_they_have_it(etcd: EtcdProcess, tmp_path: Path) -> None:
    brokers = BrokerSet(etcd, tmp_path, env={"HALFMQ_BROKER_ACK": "leader"}).start()
    paused: list[int] = []
    try:
        leader = brokers.leader()
        with httpx.Client(base_url=brokers.nodes[leader].url, timeout=30) as client:
            client.post("/v1/topics", json={"name": TOPIC, "queues": 1}).raise_for_status()
            send(client, TOPIC, "replicated")
            brokers.caught_up()
            first = receive(client, "g1", TOPIC, wait=5)
            assert _bodies(first) == ["replicated"]
            assert settle(client, "ack", "g1", TOPIC, [m["receipt_handle"] for m in first]) == ["OK"]

            for node_id, node in brokers.nodes.items():
                if node_id != leader and node.pid:
                    os.kill(node.pid, signal.SIGSTOP)
                    paused.append(node.pid)
            [result] = send(client, TOPIC, "leader only")
            assert result["status"] == "SEND_OK"  # ack=leader: acknowledged on the leader's own fsync
            assert receive(client, "g1", TOPIC, wait=1.5) == []
            assert _bodies(receive(client, "g2", TOPIC, wait=1.5)) == ["replicated"]  # a new group: up to the mark only
            page = _read_by_offset(client)
            assert (_bodies(page["messages"]), page["next_offset"]) == (["replicated"], 1)
            described = client.get(path("v1", "topics", TOPIC)).json()
            assert described["queues"][0]["max_offset"] == 1
            view = client.get("/v1/cluster").json()
            assert view["high_watermark"] < view["log_end"]  # the leader has it; its replicas do not

            polled: list[list[dict]] = []

            def long_poll() -> None:
                with httpx.Client(base_url=client.base_url) as own:
                    polled.append(receive(own, "g1", TOPIC, wait=25))

            poll = threading.Thread(target=long_poll)
            poll.start()
            poll.join(timeout=1.0)
            assert poll.is_alive()  # the long poll waits: nothing visible yet
            for pid in paused:
                os.kill(pid, signal.SIGCONT)
            paused.clear()
            poll.join(timeout=20)
            assert not poll.is_alive(), "the long poll did not wake when the followers caught up"
            assert _bodies(polled[0]) == ["leader only"]
            assert _bodies(_read_by_offset(client)["messages"]) == ["replicated", "leader only"]
    finally:
        for pid in paused:
            os.kill(pid, signal.SIGCONT)
        brokers.stop()
