"""Apache's Python client given all three nodes of a set: only the leader's gRPC front listens, so its pick-first
channel over ``ipv4:a,b,c`` reaches the leader, and after a kill -9 the new one (issue 32, C2).

The application's "database" is the set of bodies it decided to commit, written before it commits; its
TransactionChecker answers from it, as a real producer answers from its tables.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.broker_set import BrokerSet
from tests.support.etcd import EtcdProcess
from tests.support.processes import free_port
from tests.support.report import report
from tests.support.waiting import wait_for

rocketmq = pytest.importorskip("rocketmq", reason="the rocketmq extra (Apache's rocketmq-python-client)")
from rocketmq import FilterExpression, Producer, SimpleConsumer, TransactionChecker  # noqa: E402
from rocketmq import TransactionResolution as Resolution  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]  # the set's start included; the test's own deadlines add up to 90 s
FAST_CHECKS = {"HALFMQ_BROKER_TRANSACTION_TIMEOUT": "1.0", "HALFMQ_BROKER_TRANSACTION_CHECK_INTERVAL": "0.5"}
TOPIC = "ledger"


@pytest.fixture
def grpc_set(etcd: EtcdProcess, tmp_path: Path) -> Iterator[tuple[BrokerSet, str]]:
    """Three nodes, each with its gRPC front's port, and the client's endpoints naming all three."""
    brokers = BrokerSet(etcd, tmp_path, env=FAST_CHECKS)
    ports = [free_port() for _ in brokers.nodes]
    for node, port in zip(brokers.nodes.values(), ports, strict=True):
        node.env["HALFMQ_BROKER_GRPC_PORT"] = str(port)
    brokers.start()
    try:
        yield brokers, ";".join(f"127.0.0.1:{port}" for port in ports)
    finally:
        brokers.stop()


class FromTheDatabase(TransactionChecker):
    def __init__(self, decided: set[bytes]) -> None:
        self.decided = decided
        self.checked: list[bytes] = []

    def check(self, message):
        self.checked.append(message.body)
        return Resolution.COMMIT if message.body in self.decided else Resolution.ROLLBACK


def _message(body: bytes):
    msg = rocketmq.Message()
    msg.topic = TOPIC
    msg.body = body
    return msg




def _listening(brokers: BrokerSet, endpoints: str) -> list[str]:
    """The nodes whose gRPC port accepts a connection."""
    ports = [int(e.rpartition(":")[2]) for e in endpoints.split(";")]
    listening = []
    for node_id, port in zip(brokers.nodes, ports, strict=True):
        with socket.socket() as s:
            s.settimeout(1)
            if s.connect_ex(("127.0.0.1", port)) == 0:
                listening.append(node_id)
    return listening


class Ledger:
    """The application: transactions with its own decision written first, and an audit consumer."""

    def __init__(self, producer, consumer, decided: set[bytes]) -> None:
        self.producer, self.consumer, self.decided = producer, consumer, decided
        self.confirmed: set[bytes] = set()  # send and commit both answered OK
        self.rolled_back: set[bytes] = set()
        self.delivered: list[bytes] = []
        self._attempts = 0
        self.sent: list[tuple[float, float]] = []  # (began, answered) of each SEND_OK, on the monotonic clock

    def transaction(self, i: int) -> bool:
        """One transaction; False when the send failed (no leader). A failed send may still have landed: each attempt has
        its own body, so such a half is not in `decided` and its check-back rolls it back."""
        self._attempts += 1
        body = f"m-{i}-{self._attempts}".encode()
        tx = self.producer.begin_transaction()
        began = time.monotonic()
        try:
            self.producer.send(_message(body), tx)
        except Exception:  # noqa: BLE001 - no leader yet: the client's retries ran out
            return False
        self.sent.append((began, time.monotonic()))
        rollback = i % 5 == 0
        (self.rolled_back if rollback else self.decided).add(body)
        try:
            tx.rollback() if rollback else tx.commit()
        except Exception:  # noqa: BLE001 - the check-back ends it from `decided`
            return True
        if not rollback:
            self.confirmed.add(body)
        return True

    def pending(self, bodies: list[bytes], decided: int) -> None:
        """Halves sent and never ended: the app "crashed" with the first ``decided`` of them decided."""
        self.decided.update(bodies[:decided])
        self.rolled_back.update(bodies[decided:])
        for body in bodies:
            self.producer.send(_message(body), self.producer.begin_transaction())

    def consume(self) -> None:
        try:
            for m in self.consumer.receive(32, 10):
                self.delivered.append(m.body)
                self.consumer.ack(m)
        except Exception:  # noqa: BLE001 - the leader is down: the next call reaches the new one
            pass

    def all_decided_delivered(self) -> bool:
        self.consume()
        return self.decided <= set(self.delivered)


def _produce_across(ledger: Ledger, kill, first: int, after: int, within: float) -> tuple[float | None, int]:
    """Transactions from ``first`` with ``kill`` 0.3 s in, until ``after`` of them were sent after the kill (or ``within`` s):
    the seconds from the kill to the first SEND_OK of a send begun after it, and the failed sends."""
    killed: list[float] = []
    killer = threading.Timer(0.3, lambda: (kill(), killed.append(time.monotonic())))
    killer.start()
    failed, i, deadline = 0, first, time.monotonic() + within
    while time.monotonic() < deadline and (not killed or sum(b > killed[0] for b, _ in ledger.sent) < after):
        if not ledger.transaction(i):
            failed += 1
            time.sleep(0.1)
            continue
        i += 1
        time.sleep(0.02)
    killer.join()
    answered = [a for b, a in ledger.sent if killed and b > killed[0]]
    return (answered[0] - killed[0] if answered else None), failed


def test_the_rocketmq_client_given_all_three_nodes_produces_is_checked_back_and_consumes_across_a_kill_9_of_the_leader(
        grpc_set: tuple[BrokerSet, str], started) -> None:
    brokers, endpoints = grpc_set
    began = time.monotonic()
    leader = brokers.leader()
    httpx.post(f"{brokers.nodes[leader].url}/v1/topics", json={"name": TOPIC, "queues": 2}, timeout=10).raise_for_status()
    wait_for(lambda: _listening(brokers, endpoints) == [leader], timeout=10, interval=0.1)  # the followers' fronts are off
    config = rocketmq.ClientConfiguration(endpoints, rocketmq.Credentials())
    decided: set[bytes] = set()  # the app's own commit, before the broker's
    checker = FromTheDatabase(decided)
    ledger = Ledger(started(Producer(config, (TOPIC,), checker)),
                    started(SimpleConsumer(config, "audit", {TOPIC: FilterExpression()}, await_duration=1)), decided)
    for i in range(20):  # before the kill, consumed as they come
        assert ledger.transaction(i)
        ledger.consume()
    wait_for(ledger.all_decided_delivered, timeout=20, interval=0.1)
    pending = [f"p-{n}".encode() for n in range(4)]
    ledger.pending(pending, decided=2)

    first_ok, failed = _produce_across(ledger, brokers.nodes[leader].kill9, 20, after=30, within=40)
    assert not brokers.nodes[leader].alive
    assert first_ok is not None, "no SEND_OK within 40 s of the kill"
    new = brokers.leader(timeout=10, not_=leader)
    # A new leader reaches producers over a fresh telemetry stream (the client rebuilds its own only at its next
    # settings sync, every 300 s): the app's next instance, answering from the same database, is checked back.
    next_instance = FromTheDatabase(decided)
    started(Producer(config, (TOPIC,), next_instance))
    wait_for(ledger.all_decided_delivered, timeout=30, interval=0.1)
    time.sleep(2)
    ledger.consume()
    report(f"rocketmq client across kill -9 of the leader {leader} (new leader {new}): first SEND_OK {first_ok:.2f} s "
           f"after the kill; {failed} sends failed, {len(ledger.confirmed)} confirmed, {len(decided)} decided to commit, "
           f"{len(ledger.rolled_back)} rolled back, {len(ledger.delivered)} delivered; checks answered by the first "
           f"producer: {len(checker.checked)}, by its next instance: {len(next_instance.checked)}; "
           f"test body {time.monotonic() - began:.1f} s; the set's own failover: {(brokers.view(new) or {}).get('last_failover')}")
    counts = Counter(ledger.delivered)
    assert set(counts) == decided
    assert [b for b, n in counts.items() if n > 1] == []
    assert ledger.confirmed <= decided
    assert set(pending[:2]) <= set(checker.checked) | set(next_instance.checked)  # committed only by a check-back
    assert not ledger.rolled_back & set(ledger.delivered)
    assert _listening(brokers, endpoints) == [new]  # the killed node is gone, the followers never listened


def test_a_leader_that_steps_down_closes_its_grpc_port_and_only_the_new_leader_listens(grpc_set: tuple[BrokerSet, str]) -> None:
    brokers, endpoints = grpc_set
    old = brokers.leader()
    wait_for(lambda: _listening(brokers, endpoints) == [old], timeout=10, interval=0.1)
    pid = brokers.nodes[old].pid
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)  # its lease runs out while it cannot renew it
    try:
        new = brokers.leader(timeout=30, not_=old)
    finally:
        os.kill(pid, signal.SIGCONT)
    wait_for(lambda: _listening(brokers, endpoints) == [new], timeout=30, interval=0.2)  # the old one stepped down
