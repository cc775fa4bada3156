"""A Kafka group's consumed offsets against a real broker process: where a group with nothing committed starts
(the client's ``auto.offset.reset``), and offsets committed inside a transaction (``send_offsets_to_transaction``)
that move only at its commit, with librdkafka through confluent-kafka and with aiokafka.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer as RdConsumer
from confluent_kafka import KafkaException
from confluent_kafka import Producer as RdProducer
from confluent_kafka import TopicPartition as RdTopicPartition
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.structs import OffsetAndMetadata

from halfmq.client import Producer
from tests.integration.broker.kafka_front.test_kafka_clients import KafkaBroker
from tests.support.unique_names import unique

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBroker]:
    running = KafkaBroker(tmp_path_factory.mktemp("kafka-offsets"))
    running.process.start(timeout=60)
    try:
        yield running
    finally:
        running.process.stop()


def fill(broker: KafkaBroker, topic: str, values: list[str]) -> None:
    with Producer(broker.url) as sdk:
        sdk.create_topic(topic, queues=1)
        for value in values:
            sdk.send(topic, value)


def rd_consumer(broker: KafkaBroker, group: str, **config: object) -> RdConsumer:
    return RdConsumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "enable.auto.commit": False,
                       "auto.offset.reset": "earliest", "isolation.level": "read_committed", **config})


def poll_values(consumer: RdConsumer, count: int, seconds: float = 20) -> list[bytes]:
    got: list[bytes] = []
    for message in consumer.consume(num_messages=count, timeout=seconds) if count else []:
        if message.error() is None:
            got.append(message.value())
    return got


def committed(broker: KafkaBroker, group: str, topic: str) -> int:
    """The group's committed offset of partition 0 as Kafka's OffsetFetch answers it (-1001: none)."""
    consumer = rd_consumer(broker, group)
    try:
        [partition] = consumer.committed([RdTopicPartition(topic, 0)], timeout=20)
        return int(partition.offset)
    finally:
        consumer.close()


# --- a group that never committed ---------------------------------------------------------------------------------
@pytest.mark.parametrize(("reset", "start", "expected"), [("latest", 2, [b"new"]), ("earliest", 0, [b"old-0", b"old-1", b"new"])])
def test_a_group_that_never_committed_starts_where_its_auto_offset_reset_says(broker: KafkaBroker, reset: str, start: int,
                                                                              expected: list[bytes]) -> None:
    topic, group = unique("KAFKA_RESET"), unique("fresh")
    fill(broker, topic, ["old-0", "old-1"])
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=group, auto_offset_reset=reset,
                             enable_auto_commit=False, consumer_timeout_ms=3000)
    partition = TopicPartition(topic, 0)
    consumer.assign([partition])
    assert consumer.committed(partition) is None  # OffsetFetch answers -1: nothing committed
    assert consumer.position(partition) == start  # so the client's reset policy placed it
    with Producer(broker.url) as sdk:
        sdk.send(topic, "new")
    assert [r.value for r in consumer] == expected
    consumer.close()


# --- consumed offsets inside a transaction ------------------------------------------------------------------------
def transform(consumer: RdConsumer, producer: RdProducer, sink: str, count: int) -> int:
    """One step of a consume-transform-produce loop: ``count`` records in, upper-cased to ``sink``, their offsets sent
    to the open transaction; the offset sent is returned."""
    messages = []
    deadline = time.monotonic() + 30
    while len(messages) < count and time.monotonic() < deadline:
        messages += [m for m in consumer.consume(num_messages=count - len(messages), timeout=2) if m.error() is None]
    assert len(messages) == count
    for message in messages:
        producer.produce(sink, message.value().upper(), partition=0)
    next_offset = messages[-1].offset() + 1
    producer.send_offsets_to_transaction([RdTopicPartition(messages[-1].topic(), 0, next_offset)],
                                         consumer.consumer_group_metadata(), 30)
    return next_offset


def sink_values(broker: KafkaBroker, sink: str) -> list[str]:
    with Producer(broker.url) as sdk:
        return [m.body for m in sdk.read(sink, 0, 0, max=20).messages]


def transactional(broker: KafkaBroker, tid: str) -> RdProducer:
    producer = RdProducer({"bootstrap.servers": broker.bootstrap, "transactional.id": tid})
    producer.init_transactions(30)
    return producer


def test_offsets_sent_to_a_transaction_move_at_its_commit_and_never_at_an_abort(broker: KafkaBroker) -> None:
    source, sink, group, tid = unique("KAFKA_CTP_IN"), unique("KAFKA_CTP_OUT"), unique("ctp"), unique("ctp-tx")
    fill(broker, source, ["a", "b", "c", "d"])
    fill(broker, sink, [])
    consumer = rd_consumer(broker, group)
    consumer.subscribe([source])
    producer = transactional(broker, tid)

    producer.begin_transaction()
    assert transform(consumer, producer, sink, 2) == 2
    producer.flush(30)
    assert committed(broker, group, source) < 0 and sink_values(broker, sink) == []  # nothing moves before the commit
    producer.commit_transaction(30)
    assert committed(broker, group, source) == 2 and sink_values(broker, sink) == ["A", "B"]

    producer.begin_transaction()
    assert transform(consumer, producer, sink, 2) == 4
    producer.abort_transaction(30)
    assert committed(broker, group, source) == 2 and sink_values(broker, sink) == ["A", "B"]  # the abort moved nothing
    consumer.close()

    read_committed = rd_consumer(broker, unique("reader"))
    read_committed.assign([RdTopicPartition(sink, 0, 0)])
    assert poll_values(read_committed, 2) == [b"A", b"B"]
    read_committed.close()


def test_a_committed_transaction_s_offsets_survive_a_kill_9_and_an_open_one_s_never_move(tmp_path: Path) -> None:
    broker = KafkaBroker(tmp_path)
    broker.process.start(timeout=60)
    try:
        source, sink, group, tid = unique("KAFKA_CRASH_IN"), unique("KAFKA_CRASH_OUT"), unique("crash"), unique("crash-tx")
        fill(broker, source, ["a", "b", "c", "d"])
        fill(broker, sink, [])
        consumer = rd_consumer(broker, group)
        consumer.assign([RdTopicPartition(source, 0, 0)])
        producer = transactional(broker, tid)
        producer.begin_transaction()
        transform(consumer, producer, sink, 2)
        producer.commit_transaction(30)
        broker.process.kill9()  # at once: the offsets file's checkpoint may not have caught up, the commit record has them
        broker.process.restart(timeout=60)
        assert committed(broker, group, source) == 2
        consumer.close()

        consumer = rd_consumer(broker, group)
        consumer.assign([RdTopicPartition(source, 0, 2)])
        producer = transactional(broker, tid)  # the producer of the restarted broker's time (its producer ids are new)
        producer.begin_transaction()
        assert transform(consumer, producer, sink, 2) == 4  # TxnOffsetCommit of 4 answered ...
        producer.flush(30)
        broker.process.kill9()  # ... and the broker dies before EndTxn: its restart aborts the open transaction
        broker.process.restart(timeout=60)
        consumer.close()
        assert committed(broker, group, source) == 2
        assert sink_values(broker, sink) == ["A", "B"]
    finally:
        broker.process.stop()


def test_offsets_past_the_transaction_s_acks_bound_are_refused_and_the_transaction_aborts(tmp_path: Path) -> None:
    broker = KafkaBroker(tmp_path, {"HALFMQ_BROKER_PRODUCER_TXN_MAX_ACKS": "2"})
    broker.process.start(timeout=60)
    try:
        source, group, tid = unique("KAFKA_BOUND"), unique("bound"), unique("bound-tx")
        with Producer(broker.url) as sdk:
            sdk.create_topic(source, queues=3)
        consumer = rd_consumer(broker, group)
        producer = transactional(broker, tid)
        producer.begin_transaction()
        with pytest.raises(KafkaException) as refused:
            producer.send_offsets_to_transaction([RdTopicPartition(source, q, 0) for q in range(3)],
                                                 consumer.consumer_group_metadata(), 30)
        assert refused.value.args[0].txn_requires_abort()
        producer.abort_transaction(30)
        producer.begin_transaction()
        producer.send_offsets_to_transaction([RdTopicPartition(source, q, 0) for q in range(2)], consumer.consumer_group_metadata(), 30)
        producer.commit_transaction(30)
        consumer.close()
        assert committed(broker, group, source) == 0  # committed now (none before): the smaller transaction fits
    finally:
        broker.process.stop()


def test_kafka_python_s_send_offsets_to_transaction_moves_the_group_at_the_commit_only(broker: KafkaBroker) -> None:
    source, sink, group, tid = unique("KAFKA_PY_CTP_IN"), unique("KAFKA_PY_CTP_OUT"), unique("pyctp"), unique("pyctp-tx")
    fill(broker, source, ["a", "b", "c"])
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id=tid)
    producer.init_transactions()
    partition = TopicPartition(source, 0)
    for offset, commit in ((2, False), (3, True)):
        producer.begin_transaction()
        producer.send(sink, b"out-%d" % offset, partition=0)
        producer.send_offsets_to_transaction({partition: OffsetAndMetadata(offset, "", -1)}, group)
        if commit:
            producer.commit_transaction()
        else:
            producer.abort_transaction()
            assert committed(broker, group, source) < 0  # the abort moved nothing
    producer.close()
    assert committed(broker, group, source) == 3
    assert sink_values(broker, sink) == ["out-3"]
