"""Kafka's copier checker (``transactions_test.py``, librdkafka's 0103 consume-transform-produce) on a real broker:
a confluent-kafka transactional copier (tests/support/kafka_copier.py) reads topic A ``read_committed`` and writes topic
B with ``send_offsets_to_transaction``; it is killed with SIGKILL a few times mid-copy and started again. A
``read_committed`` reader of B then finds no duplicate, no record of an aborted transaction, and exactly A's records.
"""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition

from halfmq.client import Producer
from tests.integration.broker.kafka_front.test_kafka_clients import KafkaBroker
from tests.support.kafka_copier import PARTITIONS
from tests.support.unique_names import unique

pytestmark = pytest.mark.timeout(180)
COPIER = Path(__file__).resolve().parents[4] / "tests" / "support" / "kafka_copier.py"
MESSAGES, BATCH, KILLS = 3000, 50, 3


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[KafkaBroker]:
    running = KafkaBroker(tmp_path)
    running.process.start(timeout=60)
    try:
        yield running
    finally:
        running.process.stop()


def copier(broker: KafkaBroker, source: str, sink: str, group: str, tid: str, log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen([sys.executable, str(COPIER), broker.bootstrap, source, sink, group, tid, str(BATCH)],
                                stdout=out, stderr=subprocess.STDOUT, cwd=COPIER.parents[2])


def copied_so_far(broker: KafkaBroker, sink: str) -> int:
    with Producer(broker.url) as sdk:
        return sum(q.max_offset for q in sdk.get_topic(sink).queues)


def read_committed(broker: KafkaBroker, sink: str) -> list[bytes]:
    """Every record of ``sink`` a read_committed consumer reads, up to each partition's end."""
    reader = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": unique("checker"), "enable.auto.commit": False,
                       "isolation.level": "read_committed"})
    partitions = [TopicPartition(sink, q, 0) for q in range(PARTITIONS)]
    ends = {p.partition: reader.get_watermark_offsets(p, timeout=10)[1] for p in partitions}
    reader.assign(partitions)
    got: list[bytes] = []
    at = {q: 0 for q in ends}
    deadline = time.monotonic() + 30
    while any(at[q] < ends[q] for q in ends) and time.monotonic() < deadline:
        for m in reader.consume(num_messages=500, timeout=1):
            if m.error() is None:
                got.append(m.value())
                at[m.partition()] = m.offset() + 1
    reader.close()
    return got


def test_a_copier_killed_mid_copy_and_restarted_copies_each_record_once_and_never_an_aborted_one(broker: KafkaBroker,
                                                                                                 tmp_path: Path) -> None:
    source, sink, group, tid = unique("COPY_IN"), unique("COPY_OUT"), unique("copier"), unique("copier-tx")
    expected = [f"m-{i:05d}" for i in range(MESSAGES)]
    with Producer(broker.url) as sdk:
        sdk.create_topic(source, queues=PARTITIONS)
        sdk.create_topic(sink, queues=PARTITIONS)
        for start in range(0, MESSAGES, 500):
            sdk.send_batch(source, expected[start:start + 500])
    log = tmp_path / "copier.log"
    for kill in range(KILLS):
        running = copier(broker, source, sink, group, tid, log)
        target = (kill + 1) * MESSAGES // (KILLS + 2)
        deadline = time.monotonic() + 30
        while copied_so_far(broker, sink) < target and running.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.1 * kill)  # mid-transaction, at a different point each time
        assert running.poll() is None, log.read_text()[-2000:]
        os.kill(running.pid, signal.SIGKILL)
        running.wait()
    finishing = copier(broker, source, sink, group, tid, log)
    assert finishing.wait(timeout=60) == 0, log.read_text()[-2000:]

    output = read_committed(broker, sink)
    counts = collections.Counter(output)
    duplicates = sum(n - 1 for n in counts.values() if n > 1)
    aborted = sum(1 for value in output if value.startswith(b"ABORT-"))
    print(f"copier checker: {len(output)} read, {duplicates} duplicates, {aborted} aborted reads, "
          f"output set == input set: {set(counts) == {v.encode() for v in expected}}")
    assert (duplicates, aborted) == (0, 0)
    assert set(counts) == {v.encode() for v in expected}
