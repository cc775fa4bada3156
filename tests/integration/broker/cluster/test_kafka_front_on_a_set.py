"""Kafka's clients on a broker set: every member listens on its Kafka port, a client given every node's address
reaches whichever leads, and after a kill -9 of the leader what was acknowledged is still there, read in order from
the new leader with the group's committed offsets; Metadata stops naming the killed member."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer as RdConsumer
from confluent_kafka import Producer as RdProducer
from confluent_kafka.admin import AdminClient
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from halfmq.client import Producer
from tests.support.broker_set import BrokerSet
from tests.support.etcd import EtcdProcess
from tests.support.processes import free_port

pytestmark = pytest.mark.timeout(240)


def kafka_set(etcd: EtcdProcess, tmp_path: Path) -> tuple[BrokerSet, list[str]]:
    """A started set of three whose nodes each have a Kafka port, each naming every member in its Metadata; every
    node's Kafka address."""
    brokers = BrokerSet(etcd, tmp_path)
    ports = [free_port() for _ in brokers.nodes]
    for node, port in zip(brokers.nodes.values(), ports, strict=True):
        node.env["HALFMQ_BROKER_KAFKA_PORT"] = str(port)
    addresses = [f"127.0.0.1:{port}" for port in ports]
    brokers.start()
    try:
        every_member_named(addresses)
    except BaseException:
        brokers.stop()
        raise
    return brokers, addresses


def every_member_named(addresses: list[str], timeout: float = 30.0, sasl: tuple[str, str] | None = None) -> None:
    """Wait until each node's Metadata names every member: a node learns the others' Kafka addresses from their
    registrations in etcd just after the set starts, and a client that read a Metadata naming the leader alone knows
    no other node to ask once the leader is killed (kafka-python does not go back to its bootstrap addresses)."""
    deadline = time.monotonic() + timeout
    for address in addresses:
        signed_in = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": sasl[0],
                     "sasl.password": sasl[1]} if sasl else {}
        admin = AdminClient({"bootstrap.servers": address, **signed_in})
        while len(admin.list_topics(timeout=10).brokers) < len(addresses):
            assert time.monotonic() < deadline, f"{address} does not name every member"
            time.sleep(0.2)


def named_alone(addresses: list[str], timeout: float = 30.0) -> None:
    """Wait until each of ``addresses``' nodes names those nodes only in its Metadata (a killed member is left out
    once it leaves the in-sync set, ``replica_lag_time`` after the kill)."""
    deadline = time.monotonic() + timeout
    ports = sorted(int(a.rsplit(":", 1)[1]) for a in addresses)
    for address in addresses:
        admin = AdminClient({"bootstrap.servers": address})
        while sorted(b.port for b in admin.list_topics(timeout=10).brokers.values()) != ports:
            assert time.monotonic() < deadline, f"{address} still names a member that is not alive"
            time.sleep(0.2)


def test_a_kafka_producer_and_group_follow_the_leader_across_a_kill_9(etcd: EtcdProcess, tmp_path: Path) -> None:
    brokers, addresses = kafka_set(etcd, tmp_path)
    try:
        bootstrap = addresses
        first = brokers.leader()
        # created on the leader first, with one queue (auto-creation, from any member, takes the broker's default)
        with Producer(brokers.nodes[first].url) as sdk:
            sdk.create_topic("KSET", queues=1)
        producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
        before = [producer.send("KSET", b"before-%d" % i, partition=0).get(timeout=30).offset for i in range(20)]
        assert before == list(range(20))
        consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id="kset", auto_offset_reset="earliest",
                                 enable_auto_commit=False, consumer_timeout_ms=3000)
        consumer.assign([TopicPartition("KSET", 0)])
        assert len(list(consumer)) == 20
        consumer.commit()
        consumer.close()

        brokers.nodes[first].kill9()
        brokers.leader(not_=first, timeout=60)
        producer.close()
        # clients made after the kill are given the living members: kafka-python's consumer may try a dead bootstrap
        # address, or a dead broker Metadata names, for its coordinator lookup and raise its connection error out of
        # the iterator instead of moving on; the killed member leaves Metadata once it leaves the in-sync set
        bootstrap = [a for a, n in zip(addresses, brokers.nodes, strict=True) if n != first]
        named_alone(bootstrap)
        producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
        after = [producer.send("KSET", b"after-%d" % i, partition=0).get(timeout=60).offset for i in range(20)]
        producer.close()
        assert after == list(range(20, 40))  # nothing acknowledged before the kill was lost, nothing doubled

        consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id="kset", auto_offset_reset="earliest",
                                 consumer_timeout_ms=5000)
        consumer.assign([TopicPartition("KSET", 0)])
        assert [r.value for r in consumer] == [b"after-%d" % i for i in range(20)]  # from the offset committed before the kill
        consumer.close()
    finally:
        brokers.stop()


def test_a_running_librdkafka_producer_and_consumer_follow_the_new_leader_across_a_kill_9(etcd: EtcdProcess, tmp_path: Path) -> None:
    """librdkafka's idempotent producer (acks=all) and a group consumer, both created once, keep going across a kill -9
    of the set's leader: Metadata names the new leader, and nothing the producer was acknowledged is lost."""
    brokers, addresses = kafka_set(etcd, tmp_path)
    acked: list[bytes] = []
    failed: list[str] = []
    consumed: list[bytes] = []
    stop = threading.Event()
    try:
        bootstrap = ",".join(addresses)
        first = brokers.leader()
        with Producer(brokers.nodes[first].url) as sdk:
            sdk.create_topic("KRUN", queues=2)

        def delivered(err: Any, message: Any) -> None:
            (failed.append(str(err)) if err is not None else acked.append(message.value()))

        producer = RdProducer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                               "linger.ms": 5, "message.timeout.ms": 120_000, "topic.metadata.refresh.interval.ms": 2000})
        consumer = RdConsumer({"bootstrap.servers": bootstrap, "group.id": "krun", "auto.offset.reset": "earliest",
                               "topic.metadata.refresh.interval.ms": 2000})
        consumer.subscribe(["KRUN"])

        def consume() -> None:
            while not stop.is_set():
                record = consumer.poll(0.5)
                if record is not None and record.error() is None:
                    consumed.append(record.value())

        reader = threading.Thread(target=consume)
        reader.start()

        def produce(values: range) -> None:
            for i in values:
                producer.produce("KRUN", b"m-%d" % i, partition=i % 2, on_delivery=delivered)
                producer.poll(0)
                time.sleep(0.005)

        produce(range(200))
        assert producer.flush(60) == 0 and len(acked) == 200
        brokers.nodes[first].kill9()
        produce(range(200, 400))  # while the set elects a new leader: the client holds, retries, then finds it
        new = brokers.leader(not_=first, timeout=60)
        produce(range(400, 600))
        assert producer.flush(120) == 0
        deadline = time.monotonic() + 90
        while len(set(consumed)) < len(acked) and time.monotonic() < deadline:
            time.sleep(0.5)
        stop.set()
        reader.join(30)
        consumer.close()

        assert failed == [] and len(acked) == 600
        stored: list[str] = []
        with Producer(brokers.nodes[new].url) as sdk:
            for queue in (0, 1):
                stored += [m.body for m in sdk.read("KRUN", queue, 0, max=1000).messages]
        assert {b"m-%d" % i for i in range(600)} == {v.encode() for v in stored}  # every acknowledged record is there
        assert set(consumed) >= set(acked)  # the running consumer read on from the new leader
    finally:
        stop.set()
        brokers.stop()


def transact(producer: RdProducer, n: int, committed: set[bytes], aborted: set[bytes]) -> None:
    """One transaction of 5 records over both queues, handled as librdkafka's documentation says: an error that
    requires an abort is aborted, a retriable one is committed again, anything else fails the test."""
    from confluent_kafka import KafkaException

    values = [b"t%d-%d" % (n, i) for i in range(5)]
    try:
        producer.begin_transaction()
        for i, value in enumerate(values):
            producer.produce("KTX", value, partition=i % 2)
        producer.commit_transaction(60)
        committed.update(values)
    except KafkaException as exc:
        error = exc.args[0]
        if not error.txn_requires_abort() and not error.retriable():
            raise
        if error.txn_requires_abort():
            producer.abort_transaction(60)
            aborted.update(values)
        else:
            producer.commit_transaction(60)
            committed.update(values)


def read_committed(bootstrap: str, expected: set[bytes]) -> list[bytes]:
    """What a read_committed group consumer reads of KTX, until it has ``expected`` or 60 s passed."""
    consumer = RdConsumer({"bootstrap.servers": bootstrap, "group.id": "ktx-reader", "auto.offset.reset": "earliest",
                           "isolation.level": "read_committed", "enable.auto.commit": False})
    consumer.subscribe(["KTX"])
    read: list[bytes] = []
    deadline = time.monotonic() + 60
    while set(read) < expected and time.monotonic() < deadline:
        record = consumer.poll(0.5)
        if record is not None and record.error() is None:
            read.append(record.value())
    consumer.close()
    return read


def test_librdkafka_transactions_across_a_kill_9_of_the_leader_commit_whole_or_not_at_all(etcd: EtcdProcess, tmp_path: Path) -> None:
    """A transactional librdkafka producer (created once) commits transactions of 5 records while the set's leader is
    killed: each commit the client was told succeeded is read whole by a read_committed consumer of the new leader, and
    nothing of a transaction the client aborted (its error said to) is ever read."""
    brokers, addresses = kafka_set(etcd, tmp_path)
    try:
        bootstrap = ",".join(addresses)
        first = brokers.leader()
        with Producer(brokers.nodes[first].url) as sdk:
            sdk.create_topic("KTX", queues=2)
        producer = RdProducer({"bootstrap.servers": bootstrap, "transactional.id": "ktx-1", "acks": "all",
                               "transaction.timeout.ms": 60_000, "topic.metadata.refresh.interval.ms": 2000})
        producer.init_transactions(60)
        committed: set[bytes] = set()
        aborted: set[bytes] = set()
        for n in range(10):
            transact(producer, n, committed, aborted)
        brokers.nodes[first].kill9()
        for n in range(10, 25):  # across the election: errors the client is told to abort, or retries
            transact(producer, n, committed, aborted)
        brokers.leader(not_=first, timeout=60)
        assert len(committed) >= 15 * 5  # the ones before the kill and most after it (one is aborted, typically)

        read = read_committed(bootstrap, committed)
        assert set(read) >= committed  # every transaction told committed is there, whole
        assert not set(read) & aborted  # nothing of an aborted one
        assert len(read) == len(set(read))  # nothing twice
    finally:
        brokers.stop()
