"""format("halfmq") against a real broker process: batch reads, a stream through a driver killed and a broker killed,
and the sink. Every topic also holds what a read_committed reader must never see: a rolled-back half message, a half
left pending, an aborted producer transaction and one still open."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from halfmq import Producer, TransactionProducer
from halfmq.client import LocalTransactionState
from tests.conftest import TEST_BROKER_ENV
from tests.support.processes import ROOT, BrokerProcess
from tests.support.unique_names import unique


class Decided:
    """A half message's local transaction ends as the send's ``arg`` says (no check-backs: a pending half stays pending)."""

    def execute_local_transaction(self, message, arg):
        return arg

    def check_local_transaction(self, message):
        return LocalTransactionState.UNKNOW


def send_committed(url: str, topic: str, bodies: list[str]) -> None:
    with Producer(url) as producer:
        for start in range(0, len(bodies), 50):
            producer.send_batch(topic, bodies[start:start + 50])


def send_what_must_stay_invisible(url: str, topic: str, tag: str) -> list[str]:
    """Uncommitted messages (bodies ``never-…``), and one committed half and one committed transaction; the committed bodies."""
    with TransactionProducer(url, unique("spark-halves"), Decided(), check_backs=False) as halves:
        halves.send_in_transaction(topic, f"half-committed-{tag}", LocalTransactionState.COMMIT_MESSAGE)
        halves.send_in_transaction(topic, f"never-half-rolled-back-{tag}", LocalTransactionState.ROLLBACK_MESSAGE)
        halves.send_in_transaction(topic, f"never-half-pending-{tag}", LocalTransactionState.UNKNOW)
    with Producer(url, transactional_id=unique("spark-txn")) as txn:
        txn.init_transactions()
        txn.begin_transaction()
        txn.send(topic, f"txn-committed-{tag}")
        txn.commit_transaction()
        txn.begin_transaction()
        txn.send(topic, f"never-txn-aborted-{tag}")
        txn.abort_transaction()
    left_open = Producer(url, transactional_id=unique("spark-open"))
    left_open.init_transactions()
    left_open.begin_transaction()
    left_open.send(topic, f"never-txn-open-{tag}")
    left_open.flush()  # at the broker, in a transaction that is never committed
    return [f"half-committed-{tag}", f"txn-committed-{tag}"]


@pytest.fixture(scope="module")
def module_broker(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("spark-source")
    broker = BrokerProcess(tmp / "data", tmp, {**TEST_BROKER_ENV}).start()
    yield broker
    broker.stop()


@pytest.fixture(scope="module")
def orders(module_broker):
    """A topic of 3 queues: 120 committed messages, then the never-visible kinds; the committed bodies."""
    topic = unique("SPARK_ORDERS")
    with Producer(module_broker.url) as producer:
        producer.create_topic(topic, 3)
    committed = [f"order-{i}" for i in range(120)]
    send_committed(module_broker.url, topic, committed)
    committed += send_what_must_stay_invisible(module_broker.url, topic, "a")
    return topic, committed


def read(spark, url: str, topic: str, **options: str):
    reader = spark.read.format("halfmq").option("url", url).option("topics", topic)
    for name, value in options.items():
        reader = reader.option(name, value)
    return reader.load()


def test_a_batch_read_is_every_committed_message_once_and_no_half_or_uncommitted_transaction(spark, module_broker, orders) -> None:
    topic, committed = orders
    df = read(spark, module_broker.url, topic, maxMessagesPerPartition="50", pageSize="7")
    rows = df.collect()
    assert Counter(r["body"] for r in rows) == Counter(committed)
    assert {r["queue_id"] for r in rows} == {0, 1, 2}
    assert df.rdd.getNumPartitions() >= 3  # a queue or a slice of one per partition
    with Producer(module_broker.url) as producer:
        for r in rows[:5]:
            page = producer.read(topic, r["queue_id"], r["queue_offset"], 1).messages[0]
            assert (page.msg_id, page.body, r["topic"]) == (r["msg_id"], r["body"], topic)


def test_a_batch_read_between_offsets_or_from_a_time_reads_exactly_that_range(spark, module_broker, orders) -> None:
    topic, _ = orders
    everything = read(spark, module_broker.url, topic).collect()
    by_queue = {q: sorted(r["queue_offset"] for r in everything if r["queue_id"] == q) for q in (0, 1, 2)}
    ranged = read(spark, module_broker.url, topic, startingOffsets=f'{{"{topic}": {{"0": 3, "1": 0}}}}',
                  endingOffsets=f'{{"{topic}": {{"0": 10, "1": 2, "2": 0}}}}').collect()
    assert sorted((r["queue_id"], r["queue_offset"]) for r in ranged) == \
        [(0, o) for o in by_queue[0] if 3 <= o < 10] + [(1, o) for o in by_queue[1] if o < 2]

    time.sleep(0.05)
    since = int(time.time() * 1000)
    time.sleep(0.05)
    later = [f"late-{i}" for i in range(9)]
    send_committed(module_broker.url, topic, later)
    assert sorted(r["body"] for r in read(spark, module_broker.url, topic, startingTimestamp=str(since)).collect()) == sorted(later)


def test_a_dataframe_written_to_halfmq_is_sent_once_per_row(spark, module_broker) -> None:
    topic = unique("SPARK_SINK")
    rows = [(f"sunk-{i}", [f"k{i}"], "sunk", f"user-{i % 3}") for i in range(30)]
    frame = spark.createDataFrame(rows, "body STRING, keys ARRAY<STRING>, tag STRING, message_group STRING").repartition(3)
    frame.write.format("halfmq").option("url", module_broker.url).option("topic", topic).option("batchSize", "4").mode("append").save()
    back = read(spark, module_broker.url, topic).collect()
    assert sorted((r["body"], r["keys"][0], r["tag"], r["message_group"]) for r in back) == sorted(
        (b, k[0], t, g) for b, k, t, g in rows)


def driver(url: str, topic: str, out: Path, checkpoint: Path, mode: str, log: Path) -> subprocess.Popen:
    """The stream's Spark driver as a process of its own (in a process group, so kill -9 takes its JVM with it)."""
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    with log.open("ab") as sink:
        return subprocess.Popen([sys.executable, "-m", "tests.support.spark_stream_driver", url, topic, str(out), str(checkpoint), mode],
                                cwd=ROOT, env=env, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)


def streamed_bodies(out: Path) -> list[str]:
    """What the file sink committed: the files its log (``_spark_metadata``, one file per finished micro-batch) names,
    so files of a batch the crash cut short are left out, as Spark itself reads the directory."""
    import json

    import pyarrow.parquet as pq

    log = out / "_spark_metadata"
    files = [json.loads(line)["path"] for entry in sorted(log.glob("[0-9]*")) for line in entry.read_text().splitlines()[1:] if line]
    return [body for path in files for body in pq.read_table(path.removeprefix("file:"), columns=["body"]).column("body").to_pylist()]


@pytest.mark.timeout(900)  # two Spark drivers of their own, started cold
def test_a_stream_survives_a_killed_driver_and_a_killed_broker_counting_each_committed_message_once(start_broker, tmp_path) -> None:
    broker = start_broker()
    topic = unique("SPARK_STREAM")
    with Producer(broker.url) as producer:
        producer.create_topic(topic, 2)
    first = [f"first-{i}" for i in range(60)]
    send_committed(broker.url, topic, first)
    committed = first + send_what_must_stay_invisible(broker.url, topic, "s1")
    out, checkpoint, log = tmp_path / "out", tmp_path / "checkpoint", tmp_path / "driver.log"

    crashing = driver(broker.url, topic, out, checkpoint, "run", log)
    try:
        deadline = time.monotonic() + 240
        while len(streamed_bodies(out)) < 25:  # a micro-batch (at most 25 messages each) is done and recorded
            assert crashing.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.5)
        second = [f"second-{i}" for i in range(40)]
        send_committed(broker.url, topic, second)
        committed += second
        broker.kill9()  # while the driver plans or reads its next micro-batches
        time.sleep(1.0)
    finally:
        if crashing.poll() is None:
            os.killpg(crashing.pid, signal.SIGKILL)  # the driver crashes too, mid-stream
        crashing.wait(30)

    restarted = BrokerProcess(broker.data_dir, tmp_path, {**TEST_BROKER_ENV}, port=broker.port).start()
    try:
        third = [f"third-{i}" for i in range(20)]
        send_committed(restarted.url, topic, third)
        committed += third + send_what_must_stay_invisible(restarted.url, topic, "s2")
        finishing = driver(restarted.url, topic, out, checkpoint, "available-now", log)
        assert finishing.wait(300) == 0, log.read_text()[-3000:]
    finally:
        restarted.stop()
    assert Counter(streamed_bodies(out)) == Counter(committed)
