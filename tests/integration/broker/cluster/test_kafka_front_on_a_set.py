"""Kafka's clients on a broker set: only the leader listens on its Kafka port, a client given every node's address
reaches whichever leads, and after a kill -9 of the leader what was acknowledged is still there, read in order from
the new leader with the group's committed offsets."""

from __future__ import annotations

from pathlib import Path

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from tests.support.broker_set import BrokerSet
from tests.support.etcd import EtcdProcess
from tests.support.processes import free_port

pytestmark = pytest.mark.timeout(240)


def test_a_kafka_producer_and_group_follow_the_leader_across_a_kill_9(etcd: EtcdProcess, tmp_path: Path) -> None:
    brokers = BrokerSet(etcd, tmp_path)
    kafka_ports = {}
    for node_id, node in brokers.nodes.items():
        kafka_ports[node_id] = free_port()
        node.env["HALFMQ_BROKER_KAFKA_PORT"] = str(kafka_ports[node_id])
    brokers.start()
    try:
        bootstrap = [f"127.0.0.1:{port}" for port in kafka_ports.values()]
        first = brokers.leader()
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
