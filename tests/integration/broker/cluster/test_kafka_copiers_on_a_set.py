"""librdkafka's 0103 consume-transform-produce (``do_test_consumer_producer_txn``) on a broker set whose leader is
killed -9 mid-copy, with confluent-kafka, aiokafka and kafka-python (issue 47): a copier reads KIN read_committed
from its group's committed offsets and copies each batch to the same partition of KOUT in one transaction that also
commits the batch's input offsets (``send_offsets_to_transaction``); every fourth batch is first copied with ``ABORT-``
records and aborted. A transaction the kill breaks is aborted and the copier goes back to the group's committed
offsets, as an application does. After: a read_committed consumer reads output = input, nothing twice, nothing of an
aborted transaction, and the group's committed offsets are the ends of KIN."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka import TopicPartition as AioTopicPartition
from aiokafka.errors import KafkaError as AioKafkaError
from confluent_kafka import Consumer as RdConsumer
from confluent_kafka import KafkaException, TopicPartition
from confluent_kafka import Producer as RdProducer
from kafka import KafkaConsumer, KafkaProducer, OffsetAndMetadata
from kafka import TopicPartition as PyTopicPartition
from kafka.errors import KafkaError as PyKafkaError

from halfmq.client import Producer
from tests.support.broker_set import BrokerSet
from tests.support.etcd import EtcdProcess

from .test_kafka_front_on_a_set import kafka_set

pytestmark = pytest.mark.timeout(120)

RECORDS = 200  # over KIN's two partitions
BATCH = 10  # records per transaction
KILL_AFTER = 5  # transactions committed before the leader is killed
INPUT = {b"in-%d" % i for i in range(RECORDS)}


def source_on(brokers: BrokerSet, addresses: list[str]) -> str:
    """KIN filled (``in-i`` to partition i % 2) and KOUT made empty, both of two partitions; the leader's node id."""
    first = brokers.leader()
    producer = RdProducer({"bootstrap.servers": ",".join(addresses), "enable.idempotence": True, "acks": "all"})
    with Producer(brokers.nodes[first].url) as sdk:
        sdk.create_topic("KIN", queues=2)
        sdk.create_topic("KOUT", queues=2)
    for i in range(RECORDS):
        producer.produce("KIN", b"in-%d" % i, partition=i % 2)
    assert producer.flush(30) == 0
    return first


def copied(value: bytes) -> bytes:
    return value.replace(b"in-", b"out-")


def check_the_copy(addresses: list[str], group: str) -> None:
    """Output = input, each once, nothing aborted, read by a read_committed consumer of the new leader; the group's
    committed offsets are the ends of KIN."""
    bootstrap = ",".join(addresses)
    expected = {copied(v) for v in INPUT}
    reader = RdConsumer({"bootstrap.servers": bootstrap, "group.id": group + "-reader", "auto.offset.reset": "earliest",
                         "isolation.level": "read_committed", "enable.auto.commit": False})
    reader.assign([TopicPartition("KOUT", q, 0) for q in (0, 1)])
    read: list[bytes] = []
    deadline = time.monotonic() + 30
    while set(read) < expected and time.monotonic() < deadline:
        read += [m.value() for m in reader.consume(num_messages=500, timeout=0.5) if m.error() is None]
    ends = [reader.get_watermark_offsets(TopicPartition("KOUT", q), timeout=10, cached=False)[1] for q in (0, 1)]
    reader.close()
    assert not [v for v in read if v.startswith(b"ABORT-")]  # no aborted read
    assert set(read) == expected  # output = input
    assert len(read) == len(set(read)) == sum(ends)  # no duplicate, and nothing else under the last stable offset
    offsets = RdConsumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        committed = offsets.committed([TopicPartition("KIN", q) for q in (0, 1)], timeout=20)
    finally:
        offsets.close()
    assert [p.offset for p in committed] == [RECORDS // 2, RECORDS // 2]  # the input offsets, committed with the copies


class Kill:
    """Kills the set's first leader inside the transaction after ``KILL_AFTER`` committed ones, its records sent,
    and waits for the next leader on a thread, so the copier keeps calling its client during the election."""

    def __init__(self, brokers: BrokerSet, first: str) -> None:
        self.brokers, self.first, self.thread = brokers, first, threading.Thread(target=self._elect)
        self.done = 0

    def committed_one(self) -> None:
        self.done += 1

    def inside_the_transaction(self) -> None:
        """Called with a transaction's records sent and before its offsets and commit."""
        if self.done == KILL_AFTER and not self.thread.is_alive() and self.thread.ident is None:
            self.brokers.nodes[self.first].kill9()
            self.thread.start()

    def _elect(self) -> None:
        self.brokers.leader(not_=self.first, timeout=60)

    def join(self) -> None:
        assert self.thread.ident is not None, "the leader was never killed"
        self.thread.join(60)


class Progress:
    """Where the copier stands: the input offsets its committed transactions carried (the group's committed offsets
    once it went back to them), and the transactions it committed (``kill`` is told of each)."""

    def __init__(self, kill: Kill, seconds: float = 60) -> None:
        self.kill, self.at, self.deadline = kill, {0: 0, 1: 0}, time.monotonic() + seconds
        self.broken: list[str] = []

    @property
    def copying(self) -> bool:
        """Whether input is left; fails the test when the copy takes longer than its bound."""
        assert time.monotonic() < self.deadline, f"copied up to {self.at} only; broken transactions: {self.broken}"
        return sum(self.at.values()) < RECORDS

    def committed(self, positions: dict[int, int]) -> None:
        if positions:
            self.at.update(positions)
            self.kill.committed_one()

    def went_back(self, positions: dict[int, int], why: BaseException) -> None:
        self.at, self.broken = {**self.at, **positions}, [*self.broken, repr(why)]


def retried(call: Callable[[], object], seconds: float = 60) -> object:
    """``call`` again while the set elects (a client error from a dead coordinator), until ``seconds`` passed."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return call()
        except (KafkaException, PyKafkaError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)


# --- confluent-kafka ----------------------------------------------------------------------------------------------
def rd_rewind(consumer: RdConsumer) -> dict[int, int]:
    """Back to the group's committed offsets (a broken transaction's input is copied again); those offsets."""
    committed = retried(lambda: consumer.committed([TopicPartition("KIN", q) for q in (0, 1)], timeout=10))
    assert isinstance(committed, list)
    positions = {p.partition: max(p.offset, 0) for p in committed}
    consumer.assign([TopicPartition("KIN", q, at) for q, at in positions.items()])
    return positions


def rd_copy_once(consumer: RdConsumer, producer: RdProducer, group: Any, kill: Kill) -> dict[int, int]:
    """One batch copied in one transaction (after an aborted try every fourth); the input positions it committed
    (none when nothing was read)."""
    messages = [m for m in consumer.consume(num_messages=BATCH, timeout=1) if m.error() is None]
    if not messages:
        return {}
    if kill.done % 4 == 3:
        producer.begin_transaction()
        for m in messages:
            producer.produce("KOUT", b"ABORT-" + m.value(), partition=m.partition())
        producer.flush(30)
        producer.abort_transaction(30)
    producer.begin_transaction()
    for m in messages:
        producer.produce("KOUT", copied(m.value()), partition=m.partition())
    producer.flush(30)
    kill.inside_the_transaction()
    positions = {m.partition(): m.offset() + 1 for m in messages}
    producer.send_offsets_to_transaction([TopicPartition("KIN", q, at) for q, at in positions.items()], group, 30)
    while True:
        try:
            producer.commit_transaction(30)
            return positions
        except KafkaException as exc:
            if not exc.args[0].retriable() or exc.args[0].txn_requires_abort():
                raise


def rd_producer(bootstrap: str) -> RdProducer:
    """The copier's transactional producer, its init done (fencing the one before and aborting its open transaction)."""
    producer = RdProducer({"bootstrap.servers": bootstrap, "transactional.id": "kcopy-rd", "linger.ms": 5, "transaction.timeout.ms": 60_000})
    producer.init_transactions(60)
    return producer


def test_a_librdkafka_copier_across_a_kill_9_copies_each_record_once_with_its_input_offsets(etcd: EtcdProcess, tmp_path: Path) -> None:
    """The transaction the kill breaks is aborted as librdkafka says (its error requires an abort), then the producer is
    made again: librdkafka 2.16's send_offsets_to_transaction waits past its timeout, forever, on a group coordinator
    it cached that has left Metadata (confluentinc/librdkafka#5511, #5456), as the killed leader does."""
    brokers, addresses = kafka_set(etcd, tmp_path)
    try:
        first = source_on(brokers, addresses)
        bootstrap = ",".join(addresses)
        consumer = RdConsumer({"bootstrap.servers": bootstrap, "group.id": "kcopy-rd", "enable.auto.commit": False,
                               "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
        producer = rd_producer(bootstrap)
        consumer.assign([TopicPartition("KIN", q, 0) for q in (0, 1)])
        group = consumer.consumer_group_metadata()  # an assigning consumer's: its group id alone, read once
        kill = Kill(brokers, first)
        progress = Progress(kill)
        while progress.copying:
            try:
                progress.committed(rd_copy_once(consumer, producer, group, kill))
            except KafkaException as exc:  # the transaction the kill broke: aborted, its input copied again
                assert exc.args[0].txn_requires_abort() or exc.args[0].retriable(), exc
                retried(lambda broken=producer: broken.abort_transaction(30))
                producer = rd_producer(bootstrap)
                progress.went_back(rd_rewind(consumer), exc)
        kill.join()
        consumer.close()
        check_the_copy(addresses, "kcopy-rd")
    finally:
        brokers.stop()


# --- aiokafka -----------------------------------------------------------------------------------------------------
AIO_PARTITIONS = [AioTopicPartition("KIN", q) for q in (0, 1)]
AIO_STEP_S = 30  # a transactional call still unanswered after this is taken as lost with the killed leader


async def aio_copy_once(consumer: AIOKafkaConsumer, producer: AIOKafkaProducer, kill: Kill) -> dict[int, int]:
    """One batch copied in one transaction (after an aborted try every fourth); the input positions it committed
    (none when nothing was read)."""
    got = await consumer.getmany(*AIO_PARTITIONS, timeout_ms=1000, max_records=BATCH)
    messages = [r for records in got.values() for r in records]
    if not messages:
        return {}
    if kill.done % 4 == 3:
        await producer.begin_transaction()
        for m in messages:
            await producer.send("KOUT", b"ABORT-" + m.value, partition=m.partition)
        await producer.flush()
        await asyncio.wait_for(producer.abort_transaction(), AIO_STEP_S)
    await producer.begin_transaction()
    for m in messages:
        await producer.send("KOUT", copied(m.value), partition=m.partition)
    await producer.flush()
    await asyncio.to_thread(kill.inside_the_transaction)
    positions = {AioTopicPartition("KIN", m.partition): m.offset + 1 for m in messages}
    await asyncio.wait_for(producer.send_offsets_to_transaction(positions, "kcopy-aio"), AIO_STEP_S)
    await asyncio.wait_for(producer.commit_transaction(), AIO_STEP_S)
    return {tp.partition: at for tp, at in positions.items()}


async def aio_producer(addresses: list[str]) -> AIOKafkaProducer:
    """A transactional producer, started (its init fences a previous one with the same id and aborts its open
    transaction); tried again while the set elects."""
    deadline = time.monotonic() + 60
    while True:
        producer = AIOKafkaProducer(bootstrap_servers=addresses, transactional_id="kcopy-aio", linger_ms=5,
                                    transaction_timeout_ms=60_000, request_timeout_ms=10_000, metadata_max_age_ms=2000)
        try:
            await asyncio.wait_for(producer.start(), AIO_STEP_S)
            return producer
        except (AioKafkaError, TimeoutError):
            await producer.stop()
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.5)


async def aio_rewind(consumer: AIOKafkaConsumer) -> dict[int, int]:
    """Back to the group's committed offsets, asked again while the set elects; those offsets."""
    deadline = time.monotonic() + 60
    positions: dict[int, int] = {}
    for tp in AIO_PARTITIONS:
        while True:
            try:
                positions[tp.partition] = await consumer.committed(tp) or 0
                consumer.seek(tp, positions[tp.partition])
                break
            except AioKafkaError:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.3)
    return positions


async def aio_copier(kill: Kill, addresses: list[str]) -> None:
    """The copier, until KIN is copied. aiokafka 0.14 fails a request in flight to the killed leader instead of retrying
    it, and takes TRANSACTION_ABORTABLE (KIP-890, which it predates) as fatal, so on an error the copier makes its
    producer again: the new one's init aborts the transaction the kill broke."""
    consumer = AIOKafkaConsumer(bootstrap_servers=addresses, group_id="kcopy-aio", enable_auto_commit=False,
                                auto_offset_reset="earliest", isolation_level="read_committed", metadata_max_age_ms=2000)
    await consumer.start()
    consumer.assign(AIO_PARTITIONS)
    producer = await aio_producer(addresses)
    progress = Progress(kill)
    try:
        while progress.copying:
            try:
                progress.committed(await aio_copy_once(consumer, producer, kill))
            except (AioKafkaError, TimeoutError) as exc:  # made again: its init aborts the open transaction
                with contextlib.suppress(AioKafkaError):  # its sender may have stopped on the error
                    await producer.stop()
                producer = await aio_producer(addresses)
                progress.went_back(await aio_rewind(consumer), exc)
    finally:
        await producer.stop()
        await consumer.stop()


def test_an_aiokafka_copier_across_a_kill_9_copies_each_record_once_with_its_input_offsets(etcd: EtcdProcess, tmp_path: Path) -> None:
    brokers, addresses = kafka_set(etcd, tmp_path)
    try:
        kill = Kill(brokers, source_on(brokers, addresses))
        asyncio.run(aio_copier(kill, addresses))
        gc.collect()  # the futures the discarded producers' senders left with an exception are finalized (and logged) here
        kill.join()
        check_the_copy(addresses, "kcopy-aio")
    finally:
        brokers.stop()


# --- kafka-python -------------------------------------------------------------------------------------------------
PY_PARTITIONS = [PyTopicPartition("KIN", q) for q in (0, 1)]
PY_STEP_S = 10.0


def within(call: Callable[[], object], seconds: float = PY_STEP_S) -> None:
    """``call`` on a thread, its error raised here; TimeoutError when it is still waiting after ``seconds``:
    kafka-python 3.0.12's commit and abort wait forever for a transactional request dropped with the killed
    coordinator (docs/kafka.md), so the copier gives up on that producer."""
    failure: list[BaseException] = []

    def run() -> None:
        try:
            call()
        except BaseException as exc:  # noqa: BLE001 (raised again on the caller's thread)
            failure.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        raise TimeoutError(f"no answer within {seconds} s")
    if failure:
        raise failure[0]


def py_producer(addresses: list[str]) -> KafkaProducer:
    """A transactional producer, its init done (fencing the previous one and aborting its open transaction)."""
    producer = KafkaProducer(bootstrap_servers=addresses, transactional_id="kcopy-py", linger_ms=5,
                             transaction_timeout_ms=60_000, metadata_max_age_ms=2000, max_block_ms=20_000)
    retried(producer.init_transactions)
    return producer


def py_copy_once(consumer: KafkaConsumer, producer: KafkaProducer, kill: Kill) -> dict[int, int]:
    """One batch copied in one transaction (after an aborted try every fourth); the input positions it committed
    (none when nothing was read)."""
    messages = [r for records in consumer.poll(timeout_ms=1000, max_records=BATCH).values() for r in records]
    if not messages:
        return {}
    if kill.done % 4 == 3:
        producer.begin_transaction()
        for m in messages:
            producer.send("KOUT", b"ABORT-" + m.value, partition=m.partition)
        producer.flush(PY_STEP_S)
        within(producer.abort_transaction)
    producer.begin_transaction()
    for m in messages:
        producer.send("KOUT", copied(m.value), partition=m.partition)
    producer.flush(PY_STEP_S)
    kill.inside_the_transaction()
    positions = {PyTopicPartition("KIN", m.partition): OffsetAndMetadata(m.offset + 1, "", -1) for m in messages}
    within(lambda: producer.send_offsets_to_transaction(positions, "kcopy-py"))
    within(producer.commit_transaction)
    return {tp.partition: at.offset for tp, at in positions.items()}


def aborted(producer: KafkaProducer) -> bool:
    """Whether the producer's open transaction was aborted (False: no answer, or the producer cannot go on)."""
    try:
        within(producer.abort_transaction)
        return True
    except (PyKafkaError, TimeoutError):
        return False


def py_rewind(consumer: KafkaConsumer) -> dict[int, int]:
    """Back to the group's committed offsets, asked again while the set elects; those offsets."""
    positions: dict[int, int] = {}
    for tp in PY_PARTITIONS:
        offset = retried(lambda tp=tp: consumer.committed(tp))
        positions[tp.partition] = offset if isinstance(offset, int) else 0
        consumer.seek(tp, positions[tp.partition])
    return positions


def test_a_kafka_python_copier_across_a_kill_9_copies_each_record_once_with_its_input_offsets(etcd: EtcdProcess, tmp_path: Path) -> None:
    """kafka-python's transactional producer does not survive its coordinator's kill (docs/kafka.md): the copier makes
    it again when a call gets no answer, and the new one's init aborts the transaction the kill left open."""
    brokers, addresses = kafka_set(etcd, tmp_path)
    try:
        kill = Kill(brokers, source_on(brokers, addresses))
        consumer = KafkaConsumer(bootstrap_servers=addresses, group_id="kcopy-py", enable_auto_commit=False,
                                 auto_offset_reset="earliest", isolation_level="read_committed", metadata_max_age_ms=2000)
        consumer.assign(PY_PARTITIONS)
        producer, progress = py_producer(addresses), Progress(kill)
        while progress.copying:
            try:
                progress.committed(py_copy_once(consumer, producer, kill))
            except (PyKafkaError, TimeoutError) as exc:
                if isinstance(exc, TimeoutError) or not aborted(producer):  # it would wait again: made again
                    with contextlib.suppress(PyKafkaError):  # its batches are left unsent: close times out
                        producer.close(timeout=0)
                    producer = py_producer(addresses)
                progress.went_back(py_rewind(consumer), exc)
        producer.close(timeout=5)
        consumer.close()
        kill.join()
        check_the_copy(addresses, "kcopy-py")
    finally:
        brokers.stop()
