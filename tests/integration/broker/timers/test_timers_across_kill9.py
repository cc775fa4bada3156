"""Timed messages across kill -9: sent plain, as halves (commit and rollback) and in producer transactions,
with the broker killed and restarted at seeded times; none early, none lost, none released twice.

The default run fits a loaded 2-core machine (about 600 timers due over 20 s, 3 kills);
HALFMQ_TEST_TIMERS=2000,40,4 (timers, seconds, kills) runs the plan's size.
"""

from __future__ import annotations

import os
import random
import threading
import time

import httpx
import pytest

from tests.support.processes import BrokerProcess
from tests.support.timer_checker import check

from ..http_helpers import path, read_all

TOPIC = "TIMED"
QUEUES = 2
GROUP = "timed-consumer"
TIMERS, SPAN, KILLS = (int(n) for n in os.environ.get("HALFMQ_TEST_TIMERS", "600,20,3").split(","))
SEED = int(os.environ.get("HALFMQ_TEST_SEED", "34"))


def now_ms() -> int:
    return int(time.time() * 1000)


class Ledger:
    """What the senders know: each timer's due time (a lower bound for a delay), and how its send ended."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.due: dict[str, int] = {}
        self.expected: set[str] = set()  # acknowledged, must arrive
        self.maybe: set[str] = set()  # no answer: may arrive or not
        self.never: set[str] = set()  # rolled back: must not arrive

    def sent(self, bodies: dict[str, int]) -> None:
        with self.lock:
            self.due.update(bodies)

    def ended(self, bodies, outcome: set[str]) -> None:
        with self.lock:
            outcome.update(bodies)


class Sender(threading.Thread):
    """Sends TIMERS timers over the first half of SPAN, each with a due time inside SPAN, by four routes."""

    def __init__(self, url: str, ledger: Ledger, rng: random.Random, start_ms: int) -> None:
        super().__init__(daemon=True)
        self.url, self.ledger, self.rng, self.start_ms = url, ledger, rng, start_ms
        self.count = 0
        self.txn: dict | None = None
        self.problems: list[dict] = []  # send answers that did not name the timer's place and due time

    def run(self) -> None:
        with httpx.Client(base_url=self.url, timeout=10) as client:
            while self.count < TIMERS:
                pace_ms = (self.start_ms + SPAN * 500 - now_ms()) / max(1, TIMERS - self.count)  # sent by half of SPAN
                before = self.count
                kind = self.rng.choice(("plain", "plain", "commit", "rollback", "producer_txn"))
                try:
                    getattr(self, kind)(client)
                except httpx.HTTPError:
                    time.sleep(0.05)  # the broker is down: its restart is on the way
                time.sleep(max(0.0, pace_ms * (self.count - before) / 1000))

    def _delay_ms(self) -> int:
        return self.rng.randint(300, max(400, self.start_ms + SPAN * 1000 - now_ms()))

    def _bodies(self, kind: str, n: int) -> list[str]:
        names = [f"{kind}-{self.count + i}" for i in range(n)]
        self.count += n
        return names

    def plain(self, client: httpx.Client) -> None:
        bodies = self._bodies("plain", 5)
        messages, due = [], {}
        for body in bodies:
            delay = self._delay_ms()
            if self.rng.random() < 0.5:
                messages.append({"body": body, "delay_ms": delay})
                due[body] = now_ms() + delay  # a lower bound: the broker's clock reads later
            else:
                due[body] = now_ms() + delay
                messages.append({"body": body, "deliver_at_ms": due[body]})
        self.ledger.sent(due)
        try:
            resp = client.post(path("v1", "topics", TOPIC, "messages"), json={"messages": messages})
        except httpx.HTTPError:
            self.ledger.ended(bodies, self.ledger.maybe)
            raise
        if resp.status_code == 200:
            self.problems += [r for r, b in zip(resp.json()["results"], bodies, strict=True)
                              if r["queue_offset"] != -1 or r["deliver_at_ms"] < due[b]]
        self.ledger.ended(bodies, self.ledger.expected if resp.status_code == 200 else self.ledger.maybe)

    def commit(self, client: httpx.Client, decision: str = "commit") -> None:
        [body] = self._bodies(decision, 1)
        delay = self._delay_ms()
        self.ledger.sent({body: now_ms() + delay})
        try:
            resp = client.post("/v1/transactions", json={"producer_group": "pg", "topic": TOPIC,
                                                         "message": {"body": body, "delay_ms": delay}})
        except httpx.HTTPError:
            self.ledger.ended([body], self.ledger.maybe if decision == "commit" else self.ledger.never)
            raise
        if resp.status_code != 200:
            self.ledger.ended([body], self.ledger.never)
            return
        txid = resp.json()["transaction_id"]
        self.ledger.sent({body: now_ms() + delay})  # the delay starts at the commit: no earlier than now
        outcome = self.ledger.never if decision == "rollback" else self.ledger.maybe
        try:
            end = client.post(f"/v1/transactions/{txid}/end", json={"producer_group": "pg", "state": decision})
        except httpx.HTTPError:
            self.ledger.ended([body], outcome)
            raise
        self.ledger.ended([body], self.ledger.expected if end.status_code == 200 and decision == "commit" else outcome)

    def rollback(self, client: httpx.Client) -> None:
        self.commit(client, "rollback")

    def producer_txn(self, client: httpx.Client) -> None:
        bodies = self._bodies("txn", 3)
        delays = {b: self._delay_ms() for b in bodies}
        self.ledger.sent({b: now_ms() + d for b, d in delays.items()})
        try:
            if self.txn is None:
                resp = client.post(path("v1", "transactional-ids", "timers", "init"), json={})
                resp.raise_for_status()
                self.txn = {"producer_id": resp.json()["producer_id"], "epoch": resp.json()["epoch"]}
            steps = [("begin", {"sequence": 0}),
                     ("messages", {"sequence": 1, "messages": [{"topic": TOPIC, "body": b, "delay_ms": d} for b, d in delays.items()]})]
            for verb, body in steps:
                client.post(path("v1", "transactional-ids", "timers", verb), json={**self.txn, **body}).raise_for_status()
            self.ledger.sent({b: now_ms() + d for b, d in delays.items()})  # due from the commit, not the add
            resp = client.post(path("v1", "transactional-ids", "timers", "commit"), json=self.txn)
        except httpx.HTTPError:
            self.txn = None  # a restart may have aborted it: init again (a new epoch)
            self.ledger.ended(bodies, self.ledger.maybe)
            raise
        if resp.status_code != 200:
            self.txn = None
        self.ledger.ended(bodies, self.ledger.expected if resp.status_code == 200 else self.ledger.maybe)


class Consumer(threading.Thread):
    """Receives and acks until stopped; records when each body arrived."""

    def __init__(self, url: str, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.url, self.stop_event = url, stop
        self.received: list[tuple[str, int]] = []

    def run(self) -> None:
        with httpx.Client(base_url=self.url, timeout=10) as client:
            while not self.stop_event.is_set():
                try:
                    resp = client.post(path("v1", "consumer-groups", GROUP, "topics", TOPIC, "receive"),
                                       json={"max_messages": 32, "invisible_seconds": 30, "wait_seconds": 1})
                    if resp.status_code != 200:
                        raise httpx.HTTPError(str(resp.status_code))
                    at = now_ms()
                    messages = resp.json()["messages"]
                    self.received.extend((m["body"], at) for m in messages)
                    if messages:
                        client.post(path("v1", "consumer-groups", GROUP, "topics", TOPIC, "ack"),
                                    json={"receipt_handles": [m["receipt_handle"] for m in messages]})
                except httpx.HTTPError:
                    time.sleep(0.1)


@pytest.mark.slow
def test_no_timer_is_early_lost_or_released_twice_across_kill_9(start_broker) -> None:
    rng = random.Random(SEED)
    broker: BrokerProcess = start_broker({"HALFMQ_BROKER_TRANSACTION_TIMEOUT": "3600",  # no check-backs interfere
                                          "HALFMQ_BROKER_TIMER_RUN_AGE": "1"})  # runs written and merged during the test
    httpx.post(f"{broker.url}/v1/topics", json={"name": TOPIC, "queues": QUEUES}).raise_for_status()
    ledger, stop = Ledger(), threading.Event()
    started = now_ms()
    sender, consumer = Sender(broker.url, ledger, random.Random(rng.random()), started), Consumer(broker.url, stop)
    sender.start()
    consumer.start()
    for at in sorted(rng.uniform(0.1, 0.9) * SPAN for _ in range(KILLS)):
        time.sleep(max(0.0, started / 1000 + at - time.time()))
        broker.kill9()
        broker.start()
    sender.join(SPAN * 3)
    assert not sender.is_alive(), "the sender did not finish"
    assert sender.problems == []
    deadline = time.time() + SPAN + 30
    while time.time() < deadline and not ledger.expected <= {body for body, _ in consumer.received}:
        time.sleep(0.5)
    stop.set()
    consumer.join(15)

    with httpx.Client(base_url=broker.url, timeout=15) as client:
        stored = [m for q in range(QUEUES) for m in read_all(client, TOPIC, q)]
    assert all(m.get("deliver_at_ms", 0) >= ledger.due[m["body"]] for m in stored), "the broker decided a due time too early"
    report = check(ledger.due, ledger.expected, [(m["body"], m["store_timestamp"]) for m in stored], consumer.received,
                   maybe=ledger.maybe)
    print(f"\ntimers across kill -9: {report}; {len(ledger.maybe)} without an answer, {len(ledger.never)} rolled back, "
          f"{KILLS} kills")
    assert (report.early, report.lost, report.released_twice, report.unexpected) == (0, 0, 0, 0), report
    assert report.expected > TIMERS // 2, "too few timers were acknowledged for the test to mean much"
