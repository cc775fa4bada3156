"""A follower serves what it can: reads by offset up to its leader's high watermark and no further, the topics, the DLQ list,
the cluster view and its console's read-only pages; a send, a receive or a console action is a 421 naming the leader.

"No further" needs a follower that holds bytes the leader has not acknowledged: five members of which three run, so a
majority is three, and one follower stopped (SIGSTOP); the other keeps fetching the leader's log, which ``ack=leader``
sends still write, while the high watermark cannot move.
"""

from __future__ import annotations

import html
import os
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tests.integration.broker.http_helpers import path, send
from tests.support.broker_set import BrokerSet
from tests.support.etcd import EtcdProcess
from tests.support.processes import ROOT, halfmq_command
from tests.support.waiting import wait_for

pytestmark = pytest.mark.slow

TOPIC = "follower_reads"


def _until(condition: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    wait_for(condition, timeout, interval=0.1, what=what)


def _read(url: str) -> dict:
    answer = httpx.get(f"{url}{path('v1', 'topics', TOPIC, 'queues', 0, 'messages')}", params={"offset": 0, "max": 100}, timeout=10)
    answer.raise_for_status()
    return answer.json()


def _bodies(url: str) -> list[str]:
    return [m["body"] for m in _read(url)["messages"]]


def _admin(url: str, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(halfmq_command("admin", *argv, "--broker", url), cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "COLUMNS": "250"})


def _view(url: str) -> dict:
    return httpx.get(f"{url}/v1/cluster", timeout=10).json()


def test_a_follower_answers_reads_and_its_console_and_refers_a_send_to_the_leader(broker_set: BrokerSet) -> None:
    leader = broker_set.leader()
    leader_url = broker_set.nodes[leader].url
    follower_url = next(n.url for node_id, n in broker_set.nodes.items() if node_id != leader)
    with httpx.Client(base_url=leader_url, timeout=30) as client:
        client.post("/v1/topics", json={"name": TOPIC, "queues": 1}).raise_for_status()
        send(client, TOPIC, "one", "two")
    _until(lambda: _bodies(follower_url) == ["one", "two"], "the follower serves the acknowledged messages")
    listed = httpx.get(f"{follower_url}/v1/topics", timeout=10).json()
    assert [(t["name"], t["queues"][0]["max_offset"]) for t in listed["topics"] if t["name"] == TOPIC] == [(TOPIC, 2)]
    assert httpx.get(f"{follower_url}/v1/consumer-groups/g/dlq", timeout=10).json()["messages"] == []

    refused = httpx.post(f"{follower_url}{path('v1', 'topics', TOPIC, 'messages')}", json={"messages": [{"body": "three"}]}, timeout=10)
    assert refused.status_code == 421 and refused.json()["code"] == "NOT_LEADER" and refused.json()["leader_url"] == leader_url
    receive = httpx.post(f"{follower_url}{path('v1', 'consumer-groups', 'g', 'topics', TOPIC, 'receive')}", json={}, timeout=10)
    assert receive.status_code == 421 and receive.headers["location"] == leader_url

    page = httpx.get(f"{follower_url}/console/topics", timeout=10)
    assert page.status_code == 200 and f'<tr data-topic="{TOPIC}">' in page.text
    assert 'id="follower"' in page.text and f'href="{html.escape(leader_url)}/console/topics"' in page.text
    assert 'id="follower"' not in httpx.get(f"{leader_url}/console/topics", timeout=10).text
    action = httpx.post(f"{follower_url}/console/transactions/C0A8/commit", timeout=10)
    assert action.status_code == 421 and action.headers["location"] == f"{leader_url}/console/transactions/C0A8/commit"

    listed_by_admin = _admin(follower_url, "topics", "list")  # `halfmq admin` asks the first node it is given
    assert listed_by_admin.returncode == 0 and TOPIC in listed_by_admin.stdout, listed_by_admin.stderr
    created = _admin(follower_url, "topics", "create", "another_topic")
    assert created.returncode != 0 and "NOT_LEADER" in created.stderr and leader_url in created.stderr


def test_a_follower_shows_no_message_its_leader_has_not_acknowledged(etcd: EtcdProcess, tmp_path: Path) -> None:
    brokers = BrokerSet(etcd, tmp_path, size=5, env={"HALFMQ_BROKER_ACK": "leader"})
    running = [brokers.nodes[n] for n in ("n1", "n2", "n3")]  # n4 and n5 never start: a majority is all three
    paused: int | None = None
    try:
        for node in running:
            node.spawn()
        for node in running:
            assert node.wait_healthy(60), node.tail()
        leader = brokers.leader(timeout=60)
        leader_url = brokers.nodes[leader].url
        reader, stopped = (n for node_id, n in brokers.nodes.items() if node_id != leader and n in running)
        with httpx.Client(base_url=leader_url, timeout=30) as client:
            client.post("/v1/topics", json={"name": TOPIC, "queues": 1}).raise_for_status()
            send(client, TOPIC, "acknowledged")
            _until(lambda: _bodies(reader.url) == ["acknowledged"], "the follower serves the acknowledged message")

            paused = stopped.pid
            os.kill(paused, signal.SIGSTOP)  # type: ignore[arg-type]
            [result] = send(client, TOPIC, "on two of five")
            assert result["status"] == "SEND_OK"  # ack=leader: the leader's own fsync
            end = _view(leader_url)["log_end"]
            _until(lambda: _view(reader.url)["durable_offset"] == end, "the running follower has the leader's log on disk")
            view = _view(reader.url)
            assert view["high_watermark"] < view["log_end"] == end
            page = _read(reader.url)
            assert ([m["body"] for m in page["messages"]], page["next_offset"]) == (["acknowledged"], 1)
            described = httpx.get(f"{reader.url}{path('v1', 'topics', TOPIC)}", timeout=10).json()
            assert described["queues"][0]["max_offset"] == 1

            os.kill(paused, signal.SIGCONT)  # type: ignore[arg-type]
            paused = None
            _until(lambda: _bodies(reader.url) == ["acknowledged", "on two of five"], "the follower serves it once acknowledged")
    finally:
        if paused is not None:
            os.kill(paused, signal.SIGCONT)
        brokers.stop()
