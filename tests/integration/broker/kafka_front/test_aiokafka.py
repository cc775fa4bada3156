"""aiokafka, asyncio's Kafka client with a codec of its own, unchanged against a real broker process with its Kafka
listener on: a group consuming what an idempotent producer sent, a committed and an aborted transaction seen through
a read_committed consumer, and consume-transform-produce committing its input offsets in the transaction.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from halfmq.client import Producer
from tests.integration.broker.kafka_front.test_kafka_clients import KafkaBroker
from tests.support.unique_names import unique

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBroker]:
    running = KafkaBroker(tmp_path_factory.mktemp("aiokafka-broker"))
    running.process.start(timeout=60)
    try:
        yield running
    finally:
        running.process.stop()


async def values_of(consumer: AIOKafkaConsumer, count: int, seconds: float = 30) -> list[bytes]:
    """What ``consumer`` reads until ``count`` records came or ``seconds`` passed."""
    got: list[bytes] = []
    deadline = time.monotonic() + seconds
    while len(got) < count and time.monotonic() < deadline:
        batches = await consumer.getmany(timeout_ms=500)
        got += [record.value for records in batches.values() for record in records]
    return got


async def test_an_idempotent_producer_s_records_are_read_once_by_a_group_that_commits(broker: KafkaBroker) -> None:
    topic, group = unique("AIO"), unique("aiogroup")
    producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, enable_idempotence=True, acks="all")
    await producer.start()
    try:
        sent = [await producer.send_and_wait(topic, b"v%d" % i, key=b"k%d" % i, partition=i % 2, headers=[("h", b"x")])
                for i in range(20)]
    finally:
        await producer.stop()
    assert sorted((m.partition, m.offset) for m in sent) == sorted((i % 2, i // 2) for i in range(20))

    consumer = AIOKafkaConsumer(topic, bootstrap_servers=broker.bootstrap, group_id=group, auto_offset_reset="earliest",
                                enable_auto_commit=False)
    await consumer.start()
    try:
        got = await values_of(consumer, 20)
        await consumer.commit()
    finally:
        await consumer.stop()
    assert sorted(got) == sorted(b"v%d" % i for i in range(20))

    with Producer(broker.url) as sdk:  # the group's commits are the offsets every front shows; the records the SDK reads
        [message] = sdk.read(topic, 0, 0, max=1).messages
        assert (message.body, message.keys, message.properties["h"]) == ("v0", ["k0"], "x")
    again = AIOKafkaConsumer(topic, bootstrap_servers=broker.bootstrap, group_id=group, auto_offset_reset="earliest")
    await again.start()
    try:
        assert await values_of(again, 1, seconds=3) == []  # it starts after what the group committed
    finally:
        await again.stop()


async def test_a_read_committed_consumer_sees_a_committed_transaction_and_never_an_aborted_one(broker: KafkaBroker) -> None:
    topic, tid = unique("AIO_TXN"), unique("aiotx")
    producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id=tid)
    await producer.start()
    try:
        async with producer.transaction():
            for i in range(3):
                await producer.send(topic, b"committed-%d" % i, partition=0)
        await producer.begin_transaction()
        await producer.send_and_wait(topic, b"aborted", partition=0)
        await producer.abort_transaction()
        async with producer.transaction():
            await producer.send(topic, b"after", partition=0)
    finally:
        await producer.stop()

    consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap, isolation_level="read_committed",
                                auto_offset_reset="earliest")
    await consumer.start()
    try:
        consumer.assign([TopicPartition(topic, 0)])
        assert await values_of(consumer, 4) == [b"committed-0", b"committed-1", b"committed-2", b"after"]
    finally:
        await consumer.stop()


async def test_consume_transform_produce_commits_its_input_offsets_with_its_output(broker: KafkaBroker) -> None:
    source, sink, group, tid = unique("AIO_IN"), unique("AIO_OUT"), unique("aiocopy"), unique("aiocopier")
    with Producer(broker.url) as sdk:
        sdk.create_topic(source, queues=1)
        sdk.create_topic(sink, queues=1)
        for i in range(6):
            sdk.send(source, f"in-{i}")
    consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=group, enable_auto_commit=False,
                                auto_offset_reset="earliest", isolation_level="read_committed")
    producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id=tid)
    await consumer.start()
    await producer.start()
    partition = TopicPartition(source, 0)
    try:
        consumer.assign([partition])
        for committed in (True, False):  # the first three copied and committed; the next three copied and aborted
            records = (await consumer.getmany(partition, timeout_ms=10_000, max_records=3))[partition]
            await producer.begin_transaction()
            for record in records:
                await producer.send(sink, record.value.replace(b"in", b"out"), partition=0)
            await producer.send_offsets_to_transaction({partition: records[-1].offset + 1}, group)
            await (producer.commit_transaction() if committed else producer.abort_transaction())
        assert await consumer.committed(partition) == 3  # the aborted transaction's offsets never moved
    finally:
        await producer.stop()
        await consumer.stop()

    with Producer(broker.url) as sdk:
        assert [m.body for m in sdk.read(sink, 0, 0, max=10).messages] == ["out-0", "out-1", "out-2"]


async def test_an_aiokafka_consumer_waiting_with_a_long_max_wait_gets_a_new_record_promptly(broker: KafkaBroker) -> None:
    """Fetch is answered at the record's arrival, not at the end of its max wait (a generous bound: liveness only)."""
    topic = unique("AIO_WAIT")
    with Producer(broker.url) as sdk:
        sdk.create_topic(topic, queues=1)
    consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap, fetch_max_wait_ms=30_000, auto_offset_reset="latest")
    await consumer.start()
    try:
        partition = TopicPartition(topic, 0)
        consumer.assign([partition])
        await consumer.seek_to_end(partition)
        await asyncio.sleep(1.0)  # the consumer's Fetch is waiting on the broker now
        with Producer(broker.url) as sdk:
            await asyncio.to_thread(sdk.send, topic, "wake")
        sent = time.monotonic()
        [record] = (await consumer.getmany(partition, timeout_ms=60_000))[partition]
        waited = time.monotonic() - sent
    finally:
        await consumer.stop()
    assert record.value == b"wake" and waited < 15  # with a 30 s max wait, only an answer on arrival comes this soon
