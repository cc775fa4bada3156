"""A follower rebuilt from an empty data dir under load; etcd lost and back; consumer progress across a failover."""

from __future__ import annotations

import asyncio
import shutil
import threading
import time

import httpx
import pytest

from tests.support.broker_set import BrokerSet
from tests.support.set_load import SetLoad, read_back
from tests.support.waiting import wait_for

pytestmark = pytest.mark.slow


def test_a_follower_restarted_from_an_empty_data_dir_catches_up_while_producers_run(broker_set: BrokerSet) -> None:
    leader = broker_set.leader()
    load = SetLoad([broker_set.nodes[leader].url], in_flight=16)
    loop = asyncio.new_event_loop()
    runner = threading.Thread(target=lambda: loop.run_until_complete(load.run()))
    runner.start()
    try:
        time.sleep(2.0)
        follower = next(n for n in broker_set.nodes if n != leader)
        node = broker_set.nodes[follower]
        node.stop(grace=10)
        shutil.rmtree(node.data_dir)
        node.start(timeout=60)
        time.sleep(2.0)
        wait_for(lambda: (v := broker_set.view(leader)) and follower in v["in_sync"], timeout=60)
    finally:
        loop.call_soon_threadsafe(load.stop)
        runner.join(timeout=60)
    broker_set.caught_up()
    assert broker_set.log_bytes(follower) == broker_set.log_bytes(leader)
    assert len(load.result.acknowledged) > 50


def test_without_etcd_the_leader_stops_acknowledging_within_the_ttl_and_resumes_when_etcd_is_back(broker_set: BrokerSet) -> None:
    leader = broker_set.leader()
    url = broker_set.nodes[leader].url
    broker_set.etcd.stop(grace=5)
    stopped = time.monotonic()

    def refused() -> httpx.Response | None:
        answer = httpx.post(f"{url}/v1/topics/orders/messages", json={"messages": [{"body": "x"}]}, timeout=10)
        return answer if answer.status_code == 421 else None

    answer = wait_for(refused, timeout=10, interval=0.1)
    assert time.monotonic() - stopped <= 5.0  # the lease TTL
    problem = answer.json()
    assert problem["code"] == "NOT_LEADER" and problem["retriable"] is True
    broker_set.etcd.start(timeout=30)
    again = broker_set.leader(timeout=30)
    ok = httpx.post(f"{broker_set.nodes[again].url}/v1/topics/orders/messages", json={"messages": [{"body": "y"}]}, timeout=10)
    assert ok.json()["results"][0]["status"] == "SEND_OK"


def test_consumer_group_progress_survives_a_failover(broker_set: BrokerSet) -> None:
    leader = broker_set.leader()
    url = broker_set.nodes[leader].url
    httpx.post(f"{url}/v1/topics", json={"name": "orders", "queues": 1}, timeout=10)
    for i in range(10):
        httpx.post(f"{url}/v1/topics/orders/messages", json={"messages": [{"body": f"m{i}"}]}, timeout=10)
    got = httpx.post(f"{url}/v1/consumer-groups/credit/topics/orders/receive", json={"max_messages": 6, "wait_seconds": 1}, timeout=10).json()
    handles = [m["receipt_handle"] for m in got["messages"]]
    assert len(handles) == 6
    assert httpx.post(f"{url}/v1/consumer-groups/credit/topics/orders/ack", json={"receipt_handles": handles}, timeout=10).status_code == 200
    time.sleep(2.5)  # offsets reach the followers within about a second
    broker_set.nodes[leader].kill9()
    new = broker_set.leader(timeout=30, not_=leader)
    new_url = broker_set.nodes[new].url
    rest = httpx.post(f"{new_url}/v1/consumer-groups/credit/topics/orders/receive", json={"max_messages": 10, "wait_seconds": 1}, timeout=10).json()
    assert sorted(m["body"] for m in rest["messages"]) == [f"m{i}" for i in range(6, 10)]
    assert read_back(new_url, "orders").total() == 10
