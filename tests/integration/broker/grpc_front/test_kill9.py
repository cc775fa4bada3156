"""kill -9 of the broker while Apache's Python client sends transactional messages with its own retries.

The application's "database" is a set of bodies it decided to commit, written before it commits;
its TransactionChecker answers from that set, as a real producer answers from its tables. After
the crash and restart every body the client saw as sent and committed must be delivered, every
body it decided to commit must be delivered once the checks are done, and none rolled back ever.
"""

from __future__ import annotations

import threading
import time

import pytest
from rocketmq import FilterExpression, Producer, SimpleConsumer, TransactionChecker
from rocketmq import TransactionResolution as Resolution

from tests.support.report import report
from tests.support.waiting import wait_for

from .conftest import RmqBroker, message

pytestmark = pytest.mark.slow

MESSAGES = 60


class FromTheDatabase(TransactionChecker):
    def __init__(self, decided: set[bytes]) -> None:
        self.decided = decided

    def check(self, message):
        return Resolution.COMMIT if message.body in self.decided else Resolution.ROLLBACK


def test_every_message_sent_and_committed_is_delivered_after_a_kill_9_and_none_rolled_back(rmq_broker: RmqBroker, started) -> None:
    decided: set[bytes] = set()   # the app's own commit, before the broker's
    confirmed: set[bytes] = set()  # send and commit both answered OK
    rolled_back: set[bytes] = set()
    failed_sends = 0
    producer = started(Producer(rmq_broker.config(), ("ledger",), FromTheDatabase(decided)))
    killer = threading.Timer(1.0, rmq_broker.process.kill9)
    killer.start()
    for i in range(MESSAGES):
        body = f"m-{i}".encode()
        tx = producer.begin_transaction()
        try:
            producer.send(message("ledger", body), tx)
        except Exception:  # noqa: BLE001 - the broker is down: the client's retries ran out
            failed_sends += 1
            if not rmq_broker.process.alive:
                rmq_broker.process.start()
            time.sleep(0.3)  # the app backs off; the client's channel reconnects on its own
            continue
        if i % 5 == 0:
            rolled_back.add(body)
            try:
                tx.rollback()
            except Exception:  # noqa: BLE001 - the check-back will roll it back: the body is not in `decided`
                pass
            continue
        decided.add(body)
        try:
            tx.commit()
            confirmed.add(body)
        except Exception:  # noqa: BLE001 - the check-back will commit it: the body is in `decided`
            pass
        time.sleep(0.05)
    killer.join()
    if not rmq_broker.process.alive:
        rmq_broker.process.start()
    # A restarted broker reaches the producer over a fresh telemetry stream: the app's next instance.
    started(Producer(rmq_broker.config(), ("ledger",), FromTheDatabase(decided)))
    consumer = started(SimpleConsumer(rmq_broker.config(), "audit", {"ledger": FilterExpression()}, await_duration=1))
    delivered: list[bytes] = []

    def all_decided_delivered() -> bool:
        for m in consumer.receive(32, 30):
            delivered.append(m.body)
            consumer.ack(m)
        return decided <= set(delivered)

    wait_for(all_decided_delivered, timeout=60, interval=0.1)
    time.sleep(2)
    all_decided_delivered()
    report(f"kill -9: {MESSAGES} attempted, {failed_sends} sends failed, {len(confirmed)} sent+committed confirmed, "
          f"{len(decided)} decided to commit, {len(rolled_back)} rolled back, {len(delivered)} delivered "
          f"({len(set(delivered))} distinct)")
    assert failed_sends > 0 or len(confirmed) < len(decided), "the kill -9 must hit the run"
    assert confirmed <= set(delivered)
    assert set(delivered) == decided
    assert not rolled_back & set(delivered)
