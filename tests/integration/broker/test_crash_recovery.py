"""kill -9 of a real broker under concurrent producers: nothing acknowledged is lost or doubled."""

from __future__ import annotations

import random
import threading
import time
from collections import defaultdict

import httpx
import pytest

from tests.support.processes import BrokerProcess

from .http_helpers import path, read_all

TOPIC = "CRASH_TOPIC"
QUEUES = 4


class Producer(threading.Thread):
    """Sends unique bodies until stopped; records what the broker acknowledged with SEND_OK."""

    def __init__(self, url: str, name: str, batch: int, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.url, self.tag, self.batch, self.stop_event = url, name, batch, stop
        self.acked: list[dict] = []
        self.attempted = 0
        self.errors = 0

    def run(self) -> None:
        seq = 0
        with httpx.Client(base_url=self.url, timeout=5) as client:
            while not self.stop_event.is_set():
                bodies = [f"{self.tag}-{seq + i:06d}" for i in range(self.batch)]
                seq += self.batch
                self.attempted += len(bodies)
                try:
                    resp = client.post(path("v1", "topics", TOPIC, "messages"), json={"messages": [{"body": b} for b in bodies]})
                except httpx.HTTPError:
                    self.errors += 1
                    time.sleep(0.02)
                    continue
                if resp.status_code != 200:
                    self.errors += 1
                    continue
                for body, result in zip(bodies, resp.json()["results"], strict=True):
                    if result["status"] == "SEND_OK":
                        self.acked.append({"body": body, **result})


@pytest.mark.slow
def test_every_acknowledged_message_survives_repeated_kill_9_exactly_once_in_queue_order(start_broker) -> None:
    broker: BrokerProcess = start_broker()
    httpx.post(f"{broker.url}/v1/topics", json={"name": TOPIC, "queues": QUEUES}).raise_for_status()
    stop = threading.Event()
    producers = [Producer(broker.url, f"p{i}", batch=1 if i < 4 else 8, stop=stop) for i in range(6)]
    for p in producers:
        p.start()
    kills = 4
    rng = random.Random(7)
    for _ in range(kills):
        time.sleep(rng.uniform(0.6, 1.2))
        broker.kill9()
        time.sleep(0.1)
        broker.start()
    time.sleep(0.5)
    stop.set()
    for p in producers:
        p.join(15)

    acked = [m for p in producers for m in p.acked]
    with httpx.Client(base_url=broker.url, timeout=10) as client:
        stored = {q: read_all(client, TOPIC, q) for q in range(QUEUES)}

    by_body: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for q, messages in stored.items():
        assert [m["queue_offset"] for m in messages] == list(range(len(messages))), f"queue {q} has gaps"
        for m in messages:
            by_body[m["body"]].append((q, m["queue_offset"]))
    doubled = {b: where for b, where in by_body.items() if len(where) > 1}
    assert not doubled, f"stored twice: {list(doubled.items())[:5]}"
    missing = [m for m in acked if by_body.get(m["body"]) != [(m["queue_id"], m["queue_offset"])]]
    assert not missing, f"{len(missing)} acknowledged messages lost or moved, e.g. {missing[:3]}"
    for p in producers:  # each producer sends sequentially, so its messages keep their order per queue
        for q, messages in stored.items():
            mine = [m["body"] for m in messages if m["body"].startswith(p.tag + "-")]
            assert mine == sorted(mine), f"{p.tag} out of order in queue {q}"
    total_stored = sum(len(v) for v in stored.values())
    print(f"\ncrash test: {sum(p.attempted for p in producers)} attempted, {len(acked)} acked SEND_OK, "
          f"{kills} kills, {total_stored} recovered, {sum(p.errors for p in producers)} failed requests")
    assert len(acked) > 500, "the producers barely ran: the test proved little"
    assert broker.starts == kills + 1
