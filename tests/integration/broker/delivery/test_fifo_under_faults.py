"""FIFO message groups under faults: many groups, several consumers, nacks, a consumer that stops acking, short
invisibility and kill -9 of the broker, checked by the order checker (tests/support/order_checker.py).

Every message is sent (and acknowledged) first; then four consumers drain the topic while the faults happen. The
history they record must show no message overtaken, none settled out of order, none lost. Sized to run in well under a
minute on a loaded 2-core machine; HALFMQ_FIFO_GROUPS and HALFMQ_FIFO_MESSAGES make a bigger run (the plan's is 200 x
20).
"""

from __future__ import annotations

import os
import random
import threading
import time

import httpx
import pytest

from tests.support.order_checker import History, Kind, check
from tests.support.processes import BrokerProcess
from tests.support.report import report

from ..http_helpers import path

GROUPS = int(os.environ.get("HALFMQ_FIFO_GROUPS", "100"))
MESSAGES = int(os.environ.get("HALFMQ_FIFO_MESSAGES", "10"))
TOPIC, CONSUMER_GROUP = "FIFO", "fifo-consumers"
INVISIBLE = 2.0
NACK_RATE = 0.1
# No DLQ move: the consumers cannot see one happen, so nothing may reach max_reconsume_times (tested in unit tests).
BROKER_ENV = {"HALFMQ_BROKER_MAX_RECONSUME_TIMES": "1000", "HALFMQ_BROKER_RETRY_DELAYS": "0.2,0.4"}

pytestmark = pytest.mark.slow


def send_everything(url: str, history: History) -> None:
    """Each group's messages in seq order, interleaved across groups, 100 to a request."""
    order = [(f"g{g:03d}", seq) for seq in range(MESSAGES) for g in range(GROUPS)]
    with httpx.Client(base_url=url, timeout=30) as client:
        client.post("/v1/topics", json={"name": TOPIC, "queues": 8}).raise_for_status()
        for start in range(0, len(order), 100):
            batch = order[start:start + 100]
            resp = client.post(path("v1", "topics", TOPIC, "messages"),
                               json={"messages": [{"body": f"{g}:{seq}", "message_group": g} for g, seq in batch]})
            resp.raise_for_status()
            for g, seq in batch:
                history.sent(g, seq)


class Consumer(threading.Thread):
    """Receives, nacks about one in ten, acks the rest; records what it saw. ``stop_acking_at`` (monotonic) makes it
    hold whatever it receives from then on, until ``quit_at``: its deliveries come back after their invisibility."""

    def __init__(self, url: str, name: str, history: History, done: threading.Event, seed: int,
                 stop_acking_at: float | None = None, quit_at: float | None = None) -> None:
        super().__init__(name=name, daemon=True)
        self.url, self.history, self.done, self.rng = url, history, done, random.Random(seed)
        self.stop_acking_at, self.quit_at = stop_acking_at, quit_at
        self.errors = 0

    def run(self) -> None:
        group_path = path("v1", "consumer-groups", CONSUMER_GROUP, "topics", TOPIC)
        with httpx.Client(base_url=self.url, timeout=10) as client:
            while not self.done.is_set() and (self.quit_at is None or time.monotonic() < self.quit_at):
                try:
                    self._round(client, group_path)
                except httpx.HTTPError:
                    self.errors += 1
                    time.sleep(0.2)  # the broker is down (kill -9) or restarting

    def _round(self, client: httpx.Client, group_path: str) -> None:
        resp = client.post(f"{group_path}/receive", json={"max_messages": 16, "invisible_seconds": INVISIBLE, "wait_seconds": 1})
        resp.raise_for_status()
        messages = resp.json()["messages"]
        seen = []
        for m in messages:
            g, seq = m["body"].split(":")
            assert m["message_group"] == g
            self.history.record(CONSUMER_GROUP, g, int(seq), Kind.DELIVERED)
            seen.append((g, int(seq), m["receipt_handle"]))
        if self.stop_acking_at is not None and time.monotonic() >= self.stop_acking_at:
            return  # holds them: they come back after INVISIBLE seconds
        nacks = [s for s in seen if self.rng.random() < NACK_RATE]
        acks = [s for s in seen if s not in nacks]
        if nacks:
            for g, seq, _ in nacks:
                self.history.record(CONSUMER_GROUP, g, seq, Kind.NACKED)
            client.post(f"{group_path}/nack", json={"receipt_handles": [h for _, _, h in nacks]}).raise_for_status()
        if acks:
            for g, seq, _ in acks:  # before the request: the broker settles before it answers, and may serve another first
                self.history.record(CONSUMER_GROUP, g, seq, Kind.ACK_SENT)
            resp = client.post(f"{group_path}/ack", json={"receipt_handles": [h for _, _, h in acks]})
            resp.raise_for_status()
            for (g, seq, _), result in zip(acks, resp.json()["results"], strict=True):
                if result["status"] == "OK":
                    self.history.record(CONSUMER_GROUP, g, seq, Kind.ACKED)


def lag(url: str) -> int | None:
    try:
        resp = httpx.get(f"{url}{path('v1', 'consumer-groups', CONSUMER_GROUP)}", timeout=5)
        if resp.status_code != 200:
            return None
        [state] = [t for t in resp.json()["topics"] if t["topic"] == TOPIC]
        return sum(q["lag"] for q in state["queues"])
    except (httpx.HTTPError, ValueError):
        return None


def test_fifo_groups_keep_their_order_through_nacks_a_stuck_consumer_invisibility_and_two_kill9(start_broker) -> None:
    broker: BrokerProcess = start_broker(BROKER_ENV)
    history = History()
    send_everything(broker.url, history)
    done = threading.Event()
    rng = random.Random(34)
    start = time.monotonic()
    consumers = [Consumer(broker.url, f"c{i}", history, done, seed=i) for i in range(3)]
    consumers.append(Consumer(broker.url, "stuck", history, done, seed=3, stop_acking_at=start + 1.5, quit_at=start + 8))
    for c in consumers:
        c.start()
    kills = 0
    try:
        for at in sorted(rng.uniform(2, 9) for _ in range(2)):
            time.sleep(max(0.0, start + at - time.monotonic()))
            broker.kill9()
            broker.start()
            kills += 1
        deadline = time.monotonic() + 120
        while (remaining := lag(broker.url)) != 0 and time.monotonic() < deadline:
            time.sleep(0.5)
    finally:
        done.set()
        for c in consumers:
            c.join(15)
    verdict = check(history, consumer_groups=[CONSUMER_GROUP])
    report(f"FIFO under faults: {GROUPS} groups x {MESSAGES} messages, {kills} kill -9, "
           f"{time.monotonic() - start:.1f} s; {verdict.summary()}")
    assert kills == 2
    assert remaining == 0, f"lag {remaining} after the deadline; {verdict.summary()}"
    assert verdict.counts() == {"overtaken": 0, "out_of_order": 0, "lost": 0, "duplicate_after_ack": 0,
                                "unsettled": 0}, verdict.summary()
