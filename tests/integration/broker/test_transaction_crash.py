"""kill -9 of the broker while many transactions commit and roll back concurrently."""

from __future__ import annotations

import random
import threading
import time
from collections import Counter

import httpx
import pytest

from tests.support.processes import BrokerProcess

from .http_helpers import read_all

QUEUES = 2


class TxWorker(threading.Thread):
    """half → end(commit|rollback) in a loop; remembers every end the broker answered with 200."""

    def __init__(self, url: str, name: str, stop: threading.Event, seed: int) -> None:
        super().__init__(daemon=True)
        self.url, self.tag, self.stop_event = url, name, stop
        self.rng = random.Random(seed)
        self.answered: dict[str, tuple[str, str]] = {}  # txid -> (decision, body)
        self.unanswered: dict[str, str] = {}  # txid -> body whose end got no answer
        self.errors = 0

    def run(self) -> None:
        seq = 0
        with httpx.Client(base_url=self.url, timeout=5) as client:
            while not self.stop_event.is_set():
                seq += 1
                body = f"{self.tag}-{seq}"
                try:
                    resp = client.post("/v1/transactions", json={"producer_group": "pg", "topic": "TXCRASH", "message": {"body": body}})
                    if resp.status_code != 200:
                        raise httpx.HTTPError(str(resp.status_code))
                    txid = resp.json()["transaction_id"]
                except httpx.HTTPError:
                    self.errors += 1
                    time.sleep(0.02)
                    continue
                decision = "commit" if self.rng.random() < 0.6 else "rollback"
                try:
                    resp = client.post(f"/v1/transactions/{txid}/end", json={"producer_group": "pg", "state": decision})
                    if resp.status_code == 200:
                        self.answered[txid] = (decision, body)
                        continue
                except httpx.HTTPError:
                    pass
                self.errors += 1
                self.unanswered[txid] = body


@pytest.mark.slow
def test_every_answered_end_keeps_its_outcome_across_kill_9(start_broker) -> None:
    broker: BrokerProcess = start_broker({"HALFMQ_BROKER_TRANSACTION_TIMEOUT": "3600"})  # no check-backs interfere
    httpx.post(f"{broker.url}/v1/topics", json={"name": "TXCRASH", "queues": QUEUES}).raise_for_status()
    stop = threading.Event()
    workers = [TxWorker(broker.url, f"w{i}", stop, seed=i) for i in range(6)]
    for w in workers:
        w.start()
    kills = 4
    for _ in range(kills):
        time.sleep(random.uniform(0.7, 1.2))
        broker.kill9()
        broker.start()
    time.sleep(0.5)
    stop.set()
    for w in workers:
        w.join(15)

    answered = {txid: v for w in workers for txid, v in w.answered.items()}
    unanswered = {txid: body for w in workers for txid, body in w.unanswered.items()}
    with httpx.Client(base_url=broker.url, timeout=15) as client:
        bodies = Counter(m["body"] for q in range(QUEUES) for m in read_all(client, "TXCRASH", q))
        for txid, (decision, body) in answered.items():
            resp = client.get(f"/v1/transactions/{txid}")
            assert resp.status_code == 200, f"{txid} forgotten after restart"
            expected = "committed" if decision == "commit" else "rolled_back"
            assert resp.json()["state"] == expected, f"{txid} answered {decision} but is {resp.json()['state']}"
            assert bodies[body] == (1 if decision == "commit" else 0), f"{body} ({decision}) visible {bodies[body]} times"
        for txid, body in unanswered.items():  # unknown outcome: at most once, and only if committed
            state = client.get(f"/v1/transactions/{txid}").json().get("state")
            assert bodies[body] == (1 if state == "committed" else 0)
    assert max(bodies.values(), default=0) <= 1, "a message was delivered twice"
    commits = sum(1 for d, _ in answered.values() if d == "commit")
    print(f"\ntx crash test: {len(answered)} ends answered ({commits} commits, {len(answered) - commits} rollbacks), "
          f"{len(unanswered)} unanswered, {kills} kills, {sum(bodies.values())} messages visible")
    assert len(answered) > 300, "too few transactions ran for the test to mean much"
