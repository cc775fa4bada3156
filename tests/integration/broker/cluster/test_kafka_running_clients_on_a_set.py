"""Running kafka-python and aiokafka clients on a broker set across a kill -9 of its leader (issue 47): every member
listens on its Kafka port and Metadata names them all under stable node ids, a follower sends a client on with
NOT_LEADER_OR_FOLLOWER / NOT_COORDINATOR, so clients created once keep going with the new leader, and every send they
were acknowledged is there after, in order per partition."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections import defaultdict
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.errors import KafkaError
from kafka import KafkaConsumer, KafkaProducer

from halfmq.client import Producer
from tests.support.broker_set import BrokerSet
from tests.support.etcd import EtcdProcess

from .test_kafka_front_on_a_set import kafka_set

pytestmark = pytest.mark.timeout(180)


def stored_bodies(brokers: BrokerSet, node_id: str, topic: str, partitions: int) -> dict[int, list[bytes]]:
    """Every record of ``topic``'s partitions as the SDK reads it from ``node_id``, in offset order."""
    found: dict[int, list[bytes]] = {}
    with Producer(brokers.nodes[node_id].url) as sdk:
        for q in range(partitions):
            found[q] = []
            while page := sdk.read(topic, q, len(found[q]), max=1000).messages:
                found[q] += [m.body.encode() for m in page]
    return found


def check_acknowledged(acked: dict[int, list[bytes]], stored: dict[int, list[bytes]], maybe_twice: set[bytes]) -> None:
    """Every acknowledged record is stored, in the order the acks came per partition; a record stored twice is one
    whose first answer may have been lost with the killed leader (an idempotent producer's state is the leader's
    memory, docs/kafka.md), none other."""
    for q, values in acked.items():
        first_seen = list(dict.fromkeys(stored[q]))
        assert [v for v in first_seen if v in set(values)] == values, f"partition {q}: acknowledged records missing or out of order"
        twice = {v for v in stored[q] if stored[q].count(v) > 1}
        assert twice <= maybe_twice, f"partition {q}: stored twice although answered before the kill: {sorted(twice)[:5]}"


def test_a_running_kafka_python_producer_and_consumer_follow_the_new_leader(etcd: EtcdProcess, tmp_path: Path) -> None:
    brokers, addresses = kafka_set(etcd, tmp_path)
    try:
        first = brokers.leader()
        with Producer(brokers.nodes[first].url) as sdk:
            sdk.create_topic("KPY", queues=2)
        producer = KafkaProducer(bootstrap_servers=addresses, acks="all", linger_ms=5, retries=1_000_000,
                                 delivery_timeout_ms=60_000, retry_backoff_ms=200, metadata_max_age_ms=2000)
        consumer = KafkaConsumer("KPY", bootstrap_servers=addresses, group_id="kpy", auto_offset_reset="earliest",
                                 enable_auto_commit=True, auto_commit_interval_ms=500, metadata_max_age_ms=2000)
        acked: dict[int, list[bytes]] = defaultdict(list)
        lock = threading.Lock()
        consumed: set[bytes] = set()
        stop = threading.Event()

        def consume() -> None:
            while not stop.is_set():
                for records in consumer.poll(timeout_ms=300).values():
                    consumed.update(r.value for r in records)

        reader = threading.Thread(target=consume)
        reader.start()
        futures = []

        def send(values: range) -> None:
            for i in values:
                value = b"p-%d" % i
                future = producer.send("KPY", value, partition=i % 2)
                future.add_callback(lambda md, v=value: (lock.acquire(), acked[md.partition].append(v), lock.release()))
                futures.append(future)
                time.sleep(0.005)

        send(range(300))
        producer.flush(30)
        answered_before = {v for vs in acked.values() for v in vs}
        brokers.nodes[first].kill9()
        send(range(300, 600))  # while the set elects: the client holds the batches and retries them
        new = brokers.leader(not_=first, timeout=60)
        send(range(600, 900))
        producer.flush(120)
        assert all(f.is_done and f.succeeded() for f in futures), [str(f.exception) for f in futures if f.is_done and not f.succeeded()][:3]
        deadline = time.monotonic() + 40
        everything = {v for vs in acked.values() for v in vs}
        while not everything <= consumed and time.monotonic() < deadline:
            time.sleep(0.3)
        stop.set()
        reader.join(10)
        consumer.close()
        producer.close()

        assert sum(len(v) for v in acked.values()) == 900
        check_acknowledged(acked, stored_bodies(brokers, new, "KPY", 2), set(everything) - answered_before)
        assert everything <= consumed  # the consumer created once read on from the new leader
    finally:
        brokers.stop()


async def aio_consume(consumer: AIOKafkaConsumer, consumed: list[bytes], stop: asyncio.Event, want: set[bytes],
                      has_all: asyncio.Event) -> None:
    """Read and commit as it reads until ``stop``; ``has_all`` is set once everything in ``want`` was read."""
    while not stop.is_set():
        got = await consumer.getmany(timeout_ms=300)
        for records in got.values():
            consumed.extend(r.value for r in records)
        if got:
            with contextlib.suppress(KafkaError):  # refused while the group moves: the rejoin commits again
                await consumer.commit()
        if want and want <= set(consumed):
            has_all.set()


async def aio_send(producer: AIOKafkaProducer, values: range, acked: dict[int, list[bytes]]) -> None:
    """Each value in turn, sent again while it fails: aiokafka fails a batch whose broker went away (a lost connection,
    a request timeout) instead of retrying it, so the application sends it again, as an application does."""
    for i in values:
        value = b"a-%d" % i
        for attempt in range(30):
            try:
                md = await producer.send_and_wait("KAIO", value, partition=i % 2)
                break
            except KafkaError:
                if attempt == 29:
                    raise
                await asyncio.sleep(0.5)
        acked[md.partition].append(value)


async def aio_across_a_kill(brokers: BrokerSet, addresses: list[str], first: str, acked: dict[int, list[bytes]],
                            consumed: list[bytes], answered_before: set[bytes]) -> str:
    """An idempotent aiokafka producer and a group consumer, created once, across a kill -9 of ``first``; the new leader."""
    producer = AIOKafkaProducer(bootstrap_servers=addresses, acks="all", enable_idempotence=True, linger_ms=5,
                                request_timeout_ms=10_000, retry_backoff_ms=200, metadata_max_age_ms=2000)
    consumer = AIOKafkaConsumer("KAIO", bootstrap_servers=addresses, group_id="kaio", auto_offset_reset="earliest",
                                enable_auto_commit=False, metadata_max_age_ms=2000)
    await producer.start()
    await consumer.start()
    stop, has_all, want = asyncio.Event(), asyncio.Event(), set()
    reading = asyncio.ensure_future(aio_consume(consumer, consumed, stop, want, has_all))
    try:
        await aio_send(producer, range(300), acked)
        answered_before.update(v for vs in acked.values() for v in vs)
        await asyncio.to_thread(brokers.nodes[first].kill9)
        sending = asyncio.ensure_future(aio_send(producer, range(300, 600), acked))
        new = await asyncio.to_thread(brokers.leader, 60, first)
        await sending
        want.update(v for vs in acked.values() for v in vs)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(has_all.wait(), 40)
    finally:
        stop.set()
        await reading
        await producer.stop()
        await consumer.stop()
    return new


def test_a_running_aiokafka_producer_and_group_follow_the_new_leader(etcd: EtcdProcess, tmp_path: Path) -> None:
    brokers, addresses = kafka_set(etcd, tmp_path)
    try:
        first = brokers.leader()
        with Producer(brokers.nodes[first].url) as sdk:
            sdk.create_topic("KAIO", queues=2)
        acked: dict[int, list[bytes]] = defaultdict(list)
        consumed: list[bytes] = []
        answered_before: set[bytes] = set()
        new = asyncio.run(aio_across_a_kill(brokers, addresses, first, acked, consumed, answered_before))
        everything = {v for vs in acked.values() for v in vs}
        assert len(everything) == 600
        check_acknowledged(acked, stored_bodies(brokers, new, "KAIO", 2), everything - answered_before)
        assert everything <= set(consumed)  # the group rejoined on the new leader and read on
        # from its committed offset: what was read before the last commit before the kill is not read again in bulk
        assert len(consumed) - len(set(consumed)) < 300
    finally:
        brokers.stop()


def test_a_client_given_only_a_followers_address_produces_to_the_leader(etcd: EtcdProcess, tmp_path: Path) -> None:
    brokers, addresses = kafka_set(etcd, tmp_path)
    try:
        leader = brokers.leader()
        follower = next(n for n in brokers.nodes if n != leader)
        with Producer(brokers.nodes[leader].url) as sdk:
            sdk.create_topic("KFOL", queues=1)
        address = addresses[list(brokers.nodes).index(follower)]
        # idempotent (kafka-python's default): it asks its least-loaded connected node for a producer id, the follower
        # alone here, which answers with one the leader hands out; every send goes to the leader Metadata names
        producer = KafkaProducer(bootstrap_servers=[address], acks="all", enable_idempotence=True)
        offsets = [producer.send("KFOL", b"f-%d" % i, partition=0).get(timeout=30).offset for i in range(10)]
        producer.close()
        assert offsets == list(range(10))

        async def with_aiokafka() -> list[int]:
            aio = AIOKafkaProducer(bootstrap_servers=address, acks="all", enable_idempotence=True)
            await aio.start()
            try:
                return [(await aio.send_and_wait("KFOL", b"g-%d" % i, partition=0)).offset for i in range(10)]
            finally:
                await aio.stop()

        assert asyncio.run(with_aiokafka()) == list(range(10, 20))
        assert stored_bodies(brokers, leader, "KFOL", 1)[0] == [b"f-%d" % i for i in range(10)] + [b"g-%d" % i for i in range(10)]
    finally:
        brokers.stop()


def test_a_client_given_only_a_followers_address_has_its_topic_auto_created_on_the_leader(etcd: EtcdProcess, tmp_path: Path) -> None:
    """A follower answers a Metadata naming an unknown topic as the leader would: it has the leader create it (over the
    leader's HTTP front, as the connection's principal) and names its partitions, so a producer relying on
    auto-creation and bootstrapped at a follower alone does not wait on it."""
    brokers, addresses = kafka_set(etcd, tmp_path)
    try:
        leader = brokers.leader()
        follower = next(n for n in brokers.nodes if n != leader)
        address = addresses[list(brokers.nodes).index(follower)]
        producer = KafkaProducer(bootstrap_servers=[address], acks="all", max_block_ms=20_000)
        offsets = [producer.send("KAUTO", b"auto-%d" % i, partition=0).get(timeout=30).offset for i in range(3)]
        producer.close()
        assert offsets == [0, 1, 2]
        with Producer(brokers.nodes[leader].url) as sdk:
            assert sdk.get_topic("KAUTO").name == "KAUTO"  # made on the leader, with the broker's default queue count
        assert stored_bodies(brokers, leader, "KAUTO", 1)[0] == [b"auto-0", b"auto-1", b"auto-2"]
    finally:
        brokers.stop()
