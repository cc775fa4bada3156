"""FIFO message groups across a broker set's failovers, checked by the order checker (tests/support/order_checker.py).

Producers send to many message groups through the SDK, given every node's URL (ack=quorum), each group's messages
numbered in send order and the next sent only once the previous one was answered. Consumers receive and settle
throughout: some nack about one delivery in ten, a slow one holds every other batch past its short invisibility (its
late acks come back EXPIRED and the messages are delivered again) and finally crashes holding what it has. Meanwhile
the leader is killed -9 and restarted, or SIGSTOPped until another node leads and then resumed (HALFMQ_FIFO_FAILOVERS
faults in all, 3 by default, alternating, kill -9 first). Once the set is whole again and everything is acked, the
history must show, per message group: no delivery before its predecessor was settled (overtaken), no settle out of send
order, no acknowledged send lost, no delivery after an ack answered OK. The SIGSTOP is resumed soon after the election,
within a waiting long poll's timeout: a resumed leader must not answer it from the state it had (it did before
``DeliveryService.fence``: messages the new leader had settled came back).

A second, deterministic test pins the set's own rule: a group's next message waits until its predecessor's ack is
under the high watermark (held on a majority), so a new leader cannot deliver the predecessor after its successor.

A send whose answer is not SEND_OK is never sent again: the group goes on with its next number, so a message stored
without its acknowledgement (one send the set may or may not keep) cannot come twice. Sized for well under 90 s on a
loaded 2-core machine; HALFMQ_FIFO_FAILOVERS=N makes a longer run.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from halfmq.client import BrokerError, Producer
from halfmq.client.simple_consumer import SimpleConsumer
from halfmq.wire import OutgoingMessage
from tests.support.broker_set import BrokerSet
from tests.support.nemesis import all_in_sync
from tests.support.order_checker import History, Kind, check
from tests.support.report import report

FAILOVERS = int(os.environ.get("HALFMQ_FIFO_FAILOVERS", "3"))
PRODUCERS, GROUPS_EACH = 5, 10  # 50 message groups
ROUND_PAUSE = 0.25  # between a producer's batches (one message of each of its groups per batch)
TOPIC, CONSUMER_GROUP = "FIFO", "fifo-consumers"
INVISIBLE, SHORT_INVISIBLE = 5.0, 2.0
NACK_RATE = 0.1
# No DLQ move: nothing may reach max_reconsume_times (the consumers cannot see a move); retries come back soon.
SET_ENV = {"HALFMQ_BROKER_MAX_RECONSUME_TIMES": "1000", "HALFMQ_BROKER_RETRY_DELAYS": "0.2,0.4"}

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240 + 60 * FAILOVERS)]


class Producers(threading.Thread):
    """One producer's message groups, one batch of the next number of each group at a time, until ``done``."""

    def __init__(self, urls: str, index: int, history: History, done: threading.Event) -> None:
        super().__init__(name=f"p{index}", daemon=True)
        self.urls, self.history, self.done = urls, history, done
        self.groups = [f"g{index}-{i}" for i in range(GROUPS_EACH)]
        self.not_acknowledged = 0
        self.failures: list[str] = []

    def run(self) -> None:
        with Producer(self.urls, retries=20, timeout=5.0) as producer:
            seq = 0
            while not self.done.is_set():
                batch = [OutgoingMessage(body=f"{g}:{seq}", message_group=g) for g in self.groups]
                try:
                    results = producer.send_batch(TOPIC, batch)
                except BrokerError as exc:  # stored or not: that number is never sent again
                    self.not_acknowledged += len(batch)
                    self.failures.append(f"{type(exc).__name__}: {str(exc)[:100]}")
                else:
                    for g, result in zip(self.groups, results, strict=True):
                        if result.status.value == "SEND_OK":
                            self.history.sent(g, seq)
                        else:
                            self.not_acknowledged += 1
                seq += 1
                self.done.wait(ROUND_PAUSE)


class Consumer(threading.Thread):
    """Receives and settles until ``done`` (or ``crash_at``, holding its last batch), recording what it saw.

    ``nack_rate``: deliveries nacked; ``hold``: every other batch is kept past ``invisible`` seconds before its ack
    (which comes back EXPIRED: the messages were delivered again meanwhile)."""

    def __init__(self, urls: str, name: str, history: History, done: threading.Event, seed: int, *,
                 invisible: float = INVISIBLE, nack_rate: float = NACK_RATE, hold: bool = False,
                 crash_at: threading.Event | None = None) -> None:
        super().__init__(name=name, daemon=True)
        self.urls, self.history, self.done, self.rng = urls, history, done, random.Random(seed)
        self.invisible, self.nack_rate, self.hold, self.crash_at = invisible, nack_rate, hold, crash_at
        self.batches = self.errors = self.expired = 0

    def run(self) -> None:
        with SimpleConsumer(self.urls, CONSUMER_GROUP, TOPIC, retries=5, timeout=5.0) as consumer:
            while not self.done.is_set():
                try:
                    if self._round(consumer):
                        return
                except BrokerError:
                    self.errors += 1
                    time.sleep(0.2)  # a failover under way: the SDK finds the next leader

    def _round(self, consumer: SimpleConsumer) -> bool:
        """One receive and its settles; True once crashed."""
        messages = consumer.receive(max_messages=4 if self.hold else 16, invisible_seconds=self.invisible, wait_seconds=1)
        seen = []
        for m in messages:
            g, seq = m.body.split(":")
            assert m.message_group == g, m
            self.history.record(CONSUMER_GROUP, g, int(seq), Kind.DELIVERED)
            seen.append((g, int(seq), m.receipt_handle))
        if not seen:
            return False
        self.batches += 1
        if self.crash_at is not None and self.crash_at.is_set():
            return True  # gone with its deliveries: they come back after their invisibility
        if self.hold and self.batches % 2:
            time.sleep(self.invisible + 1.0)
        self._settle(consumer, seen)
        return False

    def _settle(self, consumer: SimpleConsumer, seen: list[tuple[str, int, str | None]]) -> None:
        nacks = [s for s in seen if self.rng.random() < self.nack_rate]
        acks = [s for s in seen if s not in nacks]
        if nacks:
            for g, seq, _ in nacks:
                self.history.record(CONSUMER_GROUP, g, seq, Kind.NACKED)
            consumer.nack([h for _, _, h in nacks if h])
        if acks:
            for g, seq, _ in acks:  # before the request: the broker settles before it answers
                self.history.record(CONSUMER_GROUP, g, seq, Kind.ACK_SENT)
            results = consumer.ack([h for _, _, h in acks if h])
            for (g, seq, _), result in zip(acks, results, strict=True):
                if result.status.value == "OK":
                    self.history.record(CONSUMER_GROUP, g, seq, Kind.ACKED)
                else:
                    self.expired += 1


@contextlib.contextmanager
def stopped(pid: int) -> Iterator[None]:
    """SIGSTOP a broker this test started, SIGCONT on the way out whatever happens."""
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


def fail_over(brokers: BrokerSet, kind: str) -> str:
    """Kill -9 (then restart) or SIGSTOP (until another node leads, then resume) the leader; back once all are in sync."""
    leader = brokers.leader(timeout=60)
    node = brokers.nodes[leader]
    if kind == "kill -9":
        node.kill9()
        new = brokers.leader(timeout=60, not_=leader)
        node.start(timeout=90)
    else:
        assert node.pid is not None
        with stopped(node.pid):
            new = brokers.leader(timeout=60, not_=leader)
            time.sleep(1.0)  # the new leader serves while the old one still sleeps
    all_in_sync(brokers, timeout=90)
    return f"{kind} {leader} -> {new}"


def lag(consumer: SimpleConsumer) -> int | None:
    with contextlib.suppress(BrokerError):
        info = consumer.group_info()
        return sum(q.lag for t in info.topics if t.topic == TOPIC for q in t.queues)
    return None


def test_fifo_groups_keep_their_order_across_kill_9_and_a_stopped_leader(broker_set: BrokerSet) -> None:
    urls = ",".join(broker_set.urls)
    broker_set.leader(timeout=60)
    with Producer(urls, retries=20) as admin:
        admin.create_topic(TOPIC, 8)
    history = History()
    sending, done, crash = threading.Event(), threading.Event(), threading.Event()
    producers = [Producers(urls, i, history, sending) for i in range(PRODUCERS)]
    consumers = [Consumer(urls, f"c{i}", history, done, seed=i) for i in range(3)]
    consumers.append(Consumer(urls, "nacky", history, done, seed=3, nack_rate=0.3))
    consumers.append(Consumer(urls, "slow", history, done, seed=4, invisible=SHORT_INVISIBLE, hold=True, crash_at=crash))
    start = time.monotonic()
    for worker in (*producers, *consumers):
        worker.start()
    faults: list[str] = []
    remaining: int | None = None
    try:
        time.sleep(3.0)  # traffic under way
        for i in range(FAILOVERS):
            faults.append(fail_over(broker_set, "kill -9" if i % 2 == 0 else "SIGSTOP"))
            time.sleep(2.0)
        crash.set()
        sending.set()
        for p in producers:
            p.join(60)
        with SimpleConsumer(urls, CONSUMER_GROUP, TOPIC, retries=5) as probe:
            deadline = time.monotonic() + 60
            while (remaining := lag(probe)) != 0 and time.monotonic() < deadline:
                time.sleep(0.5)
    finally:
        sending.set()
        done.set()
        for worker in (*producers, *consumers):
            worker.join(30)
    verdict = check(history, consumer_groups=[CONSUMER_GROUP])
    report(f"FIFO across failovers: {PRODUCERS * GROUPS_EACH} groups, {'; '.join(faults)}, "
           f"{time.monotonic() - start:.1f} s; {verdict.summary()}; "
           f"not acknowledged {sum(p.not_acknowledged for p in producers)} {[f for p in producers for f in p.failures][:3]}; "
           f"consumer errors {sum(c.errors for c in consumers)}, expired acks {sum(c.expired for c in consumers)}")
    assert len(faults) == FAILOVERS
    assert verdict.sent > 20 * PRODUCERS * GROUPS_EACH // 2, verdict.summary()  # sends went on across the faults
    assert remaining == 0, f"lag {remaining} after the deadline; {verdict.summary()}"
    assert verdict.counts() == {"overtaken": 0, "out_of_order": 0, "lost": 0, "duplicate_after_ack": 0,
                                "unsettled": 0}, verdict.summary()


def post_quietly(url: str, body: dict) -> None:
    """A request whose answer does not matter (its node may be killed meanwhile)."""
    with contextlib.suppress(httpx.HTTPError):
        httpx.post(url, json=body, timeout=15)


def test_a_groups_next_message_waits_while_its_predecessors_ack_is_on_the_leader_alone(broker_set: BrokerSet) -> None:
    """The ack of a group's head settles it on the leader at once, but its successor is handed out only once a majority
    holds that ack (the high watermark passed it): else a new leader that never had the ack delivers the head again
    after its successor. Both followers are stopped while the head is acked, then the leader is killed -9."""
    leader = all_in_sync(broker_set)
    url, urls, topic = broker_set.nodes[leader].url, ",".join(broker_set.urls), "FIFO-HW"
    history = History()
    with Producer(urls, retries=20) as producer:
        producer.create_topic(topic, 1)
        for seq in range(2):
            assert producer.send(topic, f"g:{seq}", message_group="g").status.value == "SEND_OK"
            history.sent("g", seq)
    group_path = f"{url}/v1/consumer-groups/{CONSUMER_GROUP}/topics/{topic}"

    def receive(wait: float) -> list[dict]:
        answer = httpx.post(f"{group_path}/receive", json={"max_messages": 16, "invisible_seconds": 30, "wait_seconds": wait},
                            timeout=wait + 10)
        got = answer.json()["messages"] if answer.status_code == 200 else []
        for m in got:
            history.record(CONSUMER_GROUP, "g", int(m["body"].split(":")[1]), Kind.DELIVERED)
        return got

    [head] = receive(5)
    followers = [broker_set.nodes[n] for n in broker_set.nodes if n != leader]
    with contextlib.ExitStack() as paused:
        for node in followers:
            assert node.pid is not None
            paused.enter_context(stopped(node.pid))
        history.record(CONSUMER_GROUP, "g", 0, Kind.ACK_SENT)
        acking = threading.Thread(target=post_quietly, args=(f"{group_path}/ack", {"receipt_handles": [head["receipt_handle"]]}),
                                  daemon=True)
        acking.start()  # written and settled on the leader; its answer waits for a majority that is stopped
        time.sleep(0.5)
        held_back = receive(2)
        broker_set.nodes[leader].kill9()
    acking.join(20)
    broker_set.leader(timeout=60, not_=leader)
    with SimpleConsumer(urls, CONSUMER_GROUP, topic, retries=20) as consumer:
        deadline, acked = time.monotonic() + 60, set()
        while 1 not in acked and time.monotonic() < deadline:  # the last: the head before it, if it comes again
            for m in consumer.receive(max_messages=16, invisible_seconds=30, wait_seconds=1):
                seq = int(m.body.split(":")[1])
                history.record(CONSUMER_GROUP, "g", seq, Kind.DELIVERED)
                history.record(CONSUMER_GROUP, "g", seq, Kind.ACK_SENT)
                if consumer.ack([m.receipt_handle or ""])[0].status.value == "OK":
                    history.record(CONSUMER_GROUP, "g", seq, Kind.ACKED)
                    acked.add(seq)
    verdict = check(history, consumer_groups=[CONSUMER_GROUP])
    report(f"FIFO, an ack on the leader alone: {len(held_back)} handed out while the followers were stopped; {verdict.summary()}")
    assert held_back == [], held_back
    assert verdict.counts() == {"overtaken": 0, "out_of_order": 0, "lost": 0, "duplicate_after_ack": 0,
                                "unsettled": 0}, verdict.summary()
