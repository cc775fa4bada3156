"""aiokafka and kafka-python, each created once, on a broker set across a kill -9 of the leader (issue 47): given every
node's Kafka address, they find the new leader from Metadata (which names every member), an idempotent producer loses
nothing it was acknowledged, and a transactional producer's transactions are read whole by a read_committed consumer
when the client was told they committed, never when it aborted them (the one open at the kill)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka import TopicPartition as AioTopicPartition
from aiokafka.errors import KafkaError as AioKafkaError
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaError

from halfmq.client import Producer
from tests.integration.broker.cluster.test_kafka_front_on_a_set import kafka_set
from tests.support.broker_set import BrokerSet
from tests.support.etcd import EtcdProcess

pytestmark = pytest.mark.timeout(120)


def topic_on(brokers: BrokerSet, topic: str) -> str:
    first = brokers.leader()
    with Producer(brokers.nodes[first].url) as sdk:
        sdk.create_topic(topic, queues=2)
    return first


async def aio_read_committed(addresses: list[str], topic: str, expected: set[bytes]) -> list[bytes]:
    """What a read_committed aiokafka consumer of both partitions reads, until it has ``expected`` or 30 s passed."""
    consumer = AIOKafkaConsumer(bootstrap_servers=addresses, isolation_level="read_committed", auto_offset_reset="earliest")
    await consumer.start()
    read: list[bytes] = []
    try:
        consumer.assign([AioTopicPartition(topic, 0), AioTopicPartition(topic, 1)])
        deadline = time.monotonic() + 30
        while set(read) < expected and time.monotonic() < deadline:
            batches = await consumer.getmany(timeout_ms=500)
            read += [r.value for rs in batches.values() for r in rs]
    finally:
        await consumer.stop()
    return read


async def aio_transact(producer: AIOKafkaProducer, n: int, committed: set[bytes], aborted: set[bytes],
                       midway: Callable[[], None] = lambda: None) -> None:
    """One transaction of 5 records over both partitions, ``midway`` run once the first 3 are acknowledged. aiokafka
    does not fail a transaction for a failed send: the sends are awaited before the commit, and any error aborts."""
    values = [b"t%d-%d" % (n, i) for i in range(5)]
    try:
        await producer.begin_transaction()
        await asyncio.gather(*[await producer.send("KAIO", v, partition=i % 2) for i, v in enumerate(values[:3])])
        midway()
        await asyncio.gather(*[await producer.send("KAIO", v, partition=i % 2) for i, v in enumerate(values[3:])])
        await producer.commit_transaction()
        committed.update(values)
    except AioKafkaError:
        aborted.update(values)
        await producer.abort_transaction()


async def test_an_aiokafka_transactional_producer_commits_on_across_a_kill_9_in_a_transaction(etcd: EtcdProcess, tmp_path: Path) -> None:
    brokers, addresses = kafka_set(etcd, tmp_path)
    try:
        first = topic_on(brokers, "KAIO")
        producer = AIOKafkaProducer(bootstrap_servers=addresses, transactional_id="kaio-1", request_timeout_ms=10_000)
        await producer.start()
        committed: set[bytes] = set()
        aborted: set[bytes] = set()
        try:
            for n in range(5):
                await aio_transact(producer, n, committed, aborted)
            await aio_transact(producer, 5, committed, aborted, midway=brokers.nodes[first].kill9)
            for n in range(6, 16):
                await asyncio.wait_for(aio_transact(producer, n, committed, aborted), 40)
        finally:
            await producer.stop()
        assert len(committed) >= 15 * 5  # every transaction but the one open at the kill (and at most one more)

        read = await aio_read_committed(addresses, "KAIO", committed)
        assert set(read) >= committed  # every transaction told committed is there, whole
        assert not set(read) & aborted  # nothing of an aborted one
        assert len(read) == len(set(read))  # nothing twice
    finally:
        brokers.stop()


async def test_an_aiokafka_idempotent_producer_and_read_committed_group_go_on_across_a_kill_9(etcd: EtcdProcess, tmp_path: Path) -> None:
    brokers, addresses = kafka_set(etcd, tmp_path)
    try:
        first = topic_on(brokers, "KAIDEM")
        producer = AIOKafkaProducer(bootstrap_servers=addresses, enable_idempotence=True, acks="all", request_timeout_ms=10_000)
        consumer = AIOKafkaConsumer("KAIDEM", bootstrap_servers=addresses, group_id="kaidem", isolation_level="read_committed",
                                    auto_offset_reset="earliest", enable_auto_commit=False)
        await producer.start()
        await consumer.start()
        acked: list[bytes] = []
        read: list[bytes] = []

        async def produce(values: range) -> None:
            for i in values:
                try:
                    await producer.send_and_wait("KAIDEM", b"m-%d" % i, partition=i % 2)
                    acked.append(b"m-%d" % i)
                except AioKafkaError:
                    pass  # not acknowledged: may or may not be there

        async def consume_until(count: int) -> None:
            deadline = time.monotonic() + 30
            while len(set(read)) < count and time.monotonic() < deadline:
                batches = await consumer.getmany(timeout_ms=500)
                read.extend(r.value for rs in batches.values() for r in rs)
                if batches:
                    await consumer.commit()

        try:
            await produce(range(50))
            await consume_until(50)
            brokers.nodes[first].kill9()
            await asyncio.wait_for(produce(range(50, 100)), 60)
            await consume_until(len(set(acked)))
        finally:
            await producer.stop()
            await consumer.stop()
        assert len(acked) >= 95  # the client went on: at most the sends in flight at the kill failed
        assert set(read) >= set(acked)  # the group consumer read on from the new leader, everything acknowledged
    finally:
        brokers.stop()


def test_a_kafka_python_idempotent_producer_and_read_committed_consumer_go_on_across_a_kill_9(etcd: EtcdProcess, tmp_path: Path) -> None:
    """kafka-python's default producer (idempotent, acks=all) created once: after the kill its next batches, numbered
    where it left off, are taken by the new leader (which holds no state of it, as a Kafka broker that lost it)."""
    brokers, addresses = kafka_set(etcd, tmp_path)
    try:
        first = topic_on(brokers, "KPY")
        producer = KafkaProducer(bootstrap_servers=addresses, acks="all", request_timeout_ms=10_000)
        consumer = KafkaConsumer(bootstrap_servers=addresses, isolation_level="read_committed", auto_offset_reset="earliest",
                                 consumer_timeout_ms=2000)
        consumer.assign([TopicPartition("KPY", 0), TopicPartition("KPY", 1)])
        acked: list[bytes] = []
        read: list[bytes] = []

        def produce(values: range) -> None:
            for i in values:
                try:
                    producer.send("KPY", b"m-%d" % i, partition=i % 2).get(timeout=30)
                    acked.append(b"m-%d" % i)
                except KafkaError:
                    pass  # not acknowledged: may or may not be there

        def consume_until(count: int) -> None:
            deadline = time.monotonic() + 30
            while len(set(read)) < count and time.monotonic() < deadline:
                read.extend(r.value for r in consumer)

        try:
            produce(range(50))
            consume_until(50)
            brokers.nodes[first].kill9()
            produce(range(50, 100))
            consume_until(len(set(acked)))
        finally:
            producer.close(timeout=5)
            consumer.close()
        assert len(acked) >= 95  # the client went on: at most the sends in flight at the kill failed
        assert set(read) >= set(acked)  # the running consumer read on from the new leader, everything acknowledged
    finally:
        brokers.stop()
