"""librdkafka's ``0103-transactions`` scenarios on a broker set whose leader is killed -9 during the scenario (issue 47):
empty transactions, fencing by a second producer, and the watermarks each isolation level reads. The clients are
created once and given every node's Kafka address (the basic scenario across a kill: test_kafka_front_on_a_set.py)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Consumer as RdConsumer
from confluent_kafka import KafkaError, KafkaException, TopicPartition
from confluent_kafka import Producer as RdProducer

from halfmq.client import AdminClient, Producer
from tests.integration.broker.cluster.test_kafka_front_on_a_set import kafka_set, read_committed
from tests.support.broker_set import BrokerSet
from tests.support.etcd import EtcdProcess

pytestmark = pytest.mark.timeout(120)


def topic_on(brokers: BrokerSet, topic: str) -> str:
    """``topic`` created with two queues on the set's leader; the leader's node id."""
    first = brokers.leader()
    with Producer(brokers.nodes[first].url) as sdk:
        sdk.create_topic(topic, queues=2)
    return first


def rd_transactional(bootstrap: str, tid: str) -> RdProducer:
    producer = RdProducer({"bootstrap.servers": bootstrap, "transactional.id": tid, "transaction.timeout.ms": 60_000})
    producer.init_transactions(60)
    return producer


def test_librdkafka_s_empty_transactions_commit_and_abort_before_and_after_a_kill_9(etcd: EtcdProcess, tmp_path: Path) -> None:
    """0103 ``do_test_empty_txn``: a transaction with no records commits and aborts, on the leader and on the next one,
    and the producer's next transaction with records is read whole."""
    brokers, addresses = kafka_set(etcd, tmp_path)
    try:
        bootstrap = ",".join(addresses)
        first = topic_on(brokers, "KTX")
        producer = rd_transactional(bootstrap, "kempty")
        for _ in range(2):
            producer.begin_transaction()
            producer.commit_transaction(30)
            producer.begin_transaction()
            producer.abort_transaction(30)
        brokers.nodes[first].kill9()
        brokers.leader(not_=first, timeout=60)
        deadline = time.monotonic() + 60
        while True:  # the first call after the kill may find the coordinator gone: retried as librdkafka says
            try:
                producer.begin_transaction()
                producer.commit_transaction(30)
                break
            except KafkaException as exc:
                if not exc.args[0].retriable() and not exc.args[0].txn_requires_abort() or time.monotonic() > deadline:
                    raise
                if exc.args[0].txn_requires_abort():
                    producer.abort_transaction(30)
        producer.begin_transaction()
        producer.abort_transaction(30)
        producer.begin_transaction()
        for i in range(4):
            producer.produce("KTX", b"after-%d" % i, partition=i % 2)
        producer.commit_transaction(30)
        assert sorted(read_committed(bootstrap, {b"after-%d" % i for i in range(4)})) == [b"after-%d" % i for i in range(4)]
    finally:
        brokers.stop()


def test_a_second_librdkafka_producer_on_the_new_leader_fences_the_first_s_open_transaction(etcd: EtcdProcess, tmp_path: Path) -> None:
    """0103 ``do_test_fenced_txn`` across a kill: the first producer's transaction is open at the kill; a second
    producer with the same transactional id initialises on the new leader, and the first can no longer commit: only the
    second's records are read."""
    brokers, addresses = kafka_set(etcd, tmp_path)
    try:
        bootstrap = ",".join(addresses)
        first = topic_on(brokers, "KTX")
        zombie = rd_transactional(bootstrap, "kfence")
        zombie.begin_transaction()
        zombie.produce("KTX", b"zombie", partition=0)
        zombie.flush(30)
        brokers.nodes[first].kill9()
        brokers.leader(not_=first, timeout=60)
        fresh = rd_transactional(bootstrap, "kfence")
        fresh.begin_transaction()
        fresh.produce("KTX", b"fresh", partition=0)
        fresh.commit_transaction(30)
        with pytest.raises(KafkaException):
            zombie.commit_transaction(30)
        assert read_committed(bootstrap, {b"fresh"}) == [b"fresh"]
    finally:
        brokers.stop()


def watermarks(bootstrap: str, isolation: str) -> list[tuple[int, int]]:
    """Both partitions' (low, high) watermarks of KTX as a consumer of ``isolation`` asks the broker for them."""
    consumer = RdConsumer({"bootstrap.servers": bootstrap, "group.id": "kwmark-" + isolation, "isolation.level": isolation})
    try:
        return [consumer.get_watermark_offsets(TopicPartition("KTX", q), timeout=30, cached=False) for q in (0, 1)]
    finally:
        consumer.close()


def test_the_watermarks_each_isolation_level_reads_leave_out_an_open_transaction_across_a_kill_9(etcd: EtcdProcess, tmp_path: Path) -> None:
    """0103 ``do_test_wmark_isolation_level``: halfmq writes a transaction's records at its commit, so an open one is
    under neither watermark (read_uncommitted's high watermark is read_committed's last stable offset); the one open at
    the kill is aborted, and the next one moves both once it commits."""
    brokers, addresses = kafka_set(etcd, tmp_path)
    try:
        bootstrap = ",".join(addresses)
        first = topic_on(brokers, "KTX")
        producer = rd_transactional(bootstrap, "kwmark")
        producer.begin_transaction()
        for i in range(4):
            producer.produce("KTX", b"c-%d" % i, partition=i % 2)
        producer.commit_transaction(30)
        producer.begin_transaction()
        for i in range(6):
            producer.produce("KTX", b"open-%d" % i, partition=i % 2)
        producer.flush(30)
        assert watermarks(bootstrap, "read_committed") == watermarks(bootstrap, "read_uncommitted") == [(0, 2), (0, 2)]
        brokers.nodes[first].kill9()
        brokers.leader(not_=first, timeout=60)
        assert watermarks(bootstrap, "read_committed") == watermarks(bootstrap, "read_uncommitted") == [(0, 2), (0, 2)]
        with pytest.raises(KafkaException) as open_at_the_kill:
            producer.commit_transaction(30)
        assert open_at_the_kill.value.args[0].txn_requires_abort()
        producer.abort_transaction(30)
        producer.begin_transaction()
        for i in range(2):
            producer.produce("KTX", b"n-%d" % i, partition=i % 2)
        producer.commit_transaction(30)
        assert watermarks(bootstrap, "read_committed") == watermarks(bootstrap, "read_uncommitted") == [(0, 3), (0, 3)]
    finally:
        brokers.stop()


def expect_error(call: Callable[[], object], code: int) -> KafkaError:
    """``call``'s KafkaException error, asserting its code."""
    with pytest.raises(KafkaException) as raised:
        call()
    error: KafkaError = raised.value.args[0]
    assert error.code() == code, error
    return error


def misuse_before_init_and_twice(bootstrap: str, tid: str) -> RdProducer:
    """0103 ``do_test_misuse_txn``'s wrong-state calls: each answered ``_STATE`` and changing nothing; the producer is
    left ready, with no transaction open."""
    producer = RdProducer({"bootstrap.servers": bootstrap, "transactional.id": tid, "transaction.timeout.ms": 60_000})
    expect_error(producer.begin_transaction, KafkaError._STATE)  # before init_transactions
    producer.init_transactions(60)
    expect_error(lambda: producer.init_transactions(1), KafkaError._STATE)  # a second init
    expect_error(lambda: producer.commit_transaction(5), KafkaError._STATE)  # nothing begun
    expect_error(lambda: producer.abort_transaction(5), KafkaError._STATE)
    producer.begin_transaction()
    expect_error(producer.begin_transaction, KafkaError._STATE)  # begun twice
    expect_error(lambda: producer.init_transactions(3), KafkaError._STATE)  # init inside a transaction
    producer.abort_transaction(30)
    return producer


def fatal_on_a_timeout_the_broker_refuses(bootstrap: str, tid: str) -> None:
    """A ``transaction.timeout.ms`` over the broker's bound: INVALID_TRANSACTION_TIMEOUT, fatal, and every call after it
    (an abort included) answers the fatal error, storing nothing."""
    producer = RdProducer({"bootstrap.servers": bootstrap, "transactional.id": tid, "transaction.timeout.ms": 2_147_483_647})
    error = expect_error(lambda: producer.init_transactions(60), KafkaError.INVALID_TRANSACTION_TIMEOUT)
    assert error.fatal()
    for after in (producer.begin_transaction, lambda: producer.abort_transaction(5), lambda: producer.commit_transaction(5)):
        with pytest.raises(KafkaException) as raised:
            after()
        assert raised.value.args[0].fatal() or raised.value.args[0].code() == KafkaError._FATAL


def init_hysterically(bootstrap: str, tid: str) -> RdProducer:
    """0103's "multiple calls to init_transactions()": with 1 ms each, a call times out (retriable) until one
    finishes the init begun by the first, and a begin_transaction while it runs is ``_CONFLICT``; after it, init again
    is ``_STATE`` and begin works."""
    producer = RdProducer({"bootstrap.servers": bootstrap, "transactional.id": tid, "transaction.timeout.ms": 60_000})
    deadline = time.monotonic() + 60
    timed_out = 0
    while True:
        try:
            producer.init_transactions(0.001)
            break
        except KafkaException as exc:
            assert exc.args[0].code() == KafkaError._TIMED_OUT and exc.args[0].retriable(), exc
            assert time.monotonic() < deadline, "init_transactions never finished"
            timed_out += 1
            expect_error(producer.begin_transaction, KafkaError._CONFLICT)
            time.sleep(0.01)
    assert timed_out > 0  # no set answers a coordinator lookup and an InitProducerId within 1 ms
    expect_error(lambda: producer.init_transactions(5), KafkaError._STATE)
    return producer


def test_librdkafka_s_misuse_of_the_transaction_api_gets_the_right_error_before_and_after_a_kill_9(etcd: EtcdProcess, tmp_path: Path) -> None:
    """0103 ``do_test_misuse_txn`` on a set whose leader is killed -9 mid-scenario: calls out of order are refused by
    the client (``_STATE``, ``_CONFLICT`` while an init runs, ``_TIMED_OUT`` retriable), a transaction timeout over the
    broker's bound is the broker's fatal INVALID_TRANSACTION_TIMEOUT (an abort after it fails too), on the leader and
    on the next one. Nothing leaks: a transaction open at the kill, misused producers' records and the refused
    producers' ids leave no open transaction holding read_committed back (last stable offset = high watermark) and
    no record read but the final transaction's."""
    brokers, addresses = kafka_set(etcd, tmp_path)
    try:
        bootstrap = ",".join(addresses)
        first = topic_on(brokers, "KTX")
        fatal_on_a_timeout_the_broker_refuses(bootstrap, "kmisuse-fatal")
        producer = misuse_before_init_and_twice(bootstrap, "kmisuse")
        producer.begin_transaction()
        for i in range(4):
            producer.produce("KTX", b"open-at-the-kill-%d" % i, partition=i % 2)
        producer.flush(30)
        brokers.nodes[first].kill9()
        brokers.leader(not_=first, timeout=60)
        # the transaction open at the kill: its commit says abort (not fatal), and an abort after it succeeds
        with pytest.raises(KafkaException) as open_at_the_kill:
            producer.commit_transaction(30)
        assert open_at_the_kill.value.args[0].txn_requires_abort() and not open_at_the_kill.value.args[0].fatal()
        producer.abort_transaction(30)
        expect_error(lambda: producer.abort_transaction(5), KafkaError._STATE)  # nothing open after the abort
        fatal_on_a_timeout_the_broker_refuses(bootstrap, "kmisuse-fatal")  # the new leader refuses it the same way
        again = init_hysterically(bootstrap, "kmisuse")  # fences the first producer, on the new leader
        again.begin_transaction()
        for i in range(2):
            again.produce("KTX", b"final-%d" % i, partition=i % 2)
        again.commit_transaction(30)
        assert sorted(read_committed(bootstrap, {b"final-0", b"final-1"})) == [b"final-0", b"final-1"]
        assert watermarks(bootstrap, "read_committed") == watermarks(bootstrap, "read_uncommitted") == [(0, 1), (0, 1)]
        with AdminClient(brokers.nodes[brokers.leader()].url) as admin:  # the refused inits registered no transactional id
            known = {t.transactional_id: t for t in admin.list_transactional_ids().transactional_ids}
        assert sorted(known) == ["kmisuse"] and known["kmisuse"].open is None
    finally:
        brokers.stop()
