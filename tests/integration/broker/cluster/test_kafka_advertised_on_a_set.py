"""On a broker set each node advertises its own Kafka address (HALFMQ_BROKER_KAFKA_ADVERTISE): Metadata names every
member there, and the leader's as the partitions' leader: before a kill -9 of the leader, and after it the new leader's.

Each node's Kafka listener sits behind a TCP forwarder of its own (a published container port, as in
docker-compose.replicated.yml) whose address the node advertises; clients bootstrap with the three forwarders.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import Producer

from halfmq.client import Producer as SdkProducer
from tests.support.broker_set import BrokerSet
from tests.support.etcd import EtcdProcess
from tests.support.lossy_proxy import LossyProxy
from tests.support.processes import free_port
from tests.support.waiting import wait_for

pytestmark = pytest.mark.timeout(240)


def advertised(bootstrap: str) -> tuple[list[tuple[str, int]], tuple[str, int] | None]:
    """The brokers a new client's Metadata names (a new client: no address cached from before), and KADV's leader's."""
    producer = Producer({"bootstrap.servers": bootstrap, "socket.timeout.ms": 5000})
    try:
        metadata = producer.list_topics("KADV", timeout=10)
        partition = metadata.topics["KADV"].partitions.get(0)
        leader = metadata.brokers.get(partition.leader) if partition is not None else None
        return sorted((b.host, b.port) for b in metadata.brokers.values()), (leader.host, leader.port) if leader else None
    finally:
        producer.flush(5)


def test_each_node_advertises_its_own_kafka_address_and_clients_are_sent_to_the_leaders(etcd: EtcdProcess, tmp_path: Path) -> None:
    brokers = BrokerSet(etcd, tmp_path)
    forwarders: dict[str, LossyProxy] = {}
    for node_id, node in brokers.nodes.items():
        kafka_port = free_port()
        forwarders[node_id] = LossyProxy(kafka_port, match="", drops=0)  # forwards every byte both ways
        node.env.update({"HALFMQ_BROKER_KAFKA_PORT": str(kafka_port), "HALFMQ_BROKER_KAFKA_ADVERTISE": f"localhost:{forwarders[node_id].port}"})
    bootstrap = ",".join(f"127.0.0.1:{f.port}" for f in forwarders.values())
    try:
        brokers.start()
        first = brokers.leader()
        with SdkProducer(brokers.nodes[first].url) as sdk:
            sdk.create_topic("KADV", queues=1)
        every = sorted(("localhost", f.port) for f in forwarders.values())
        assert wait_for(lambda: advertised(bootstrap) == (every, ("localhost", forwarders[first].port)), timeout=30, interval=0.5)

        producer = Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": 30_000})
        delivered: list[str] = []
        producer.produce("KADV", b"through the leader's advertised address", partition=0,
                         on_delivery=lambda err, msg: delivered.append("error" if err else "ok"))
        assert producer.flush(30) == 0 and delivered == ["ok"]

        brokers.nodes[first].kill9()
        second = brokers.leader(not_=first, timeout=60)
        assert wait_for(lambda: advertised(bootstrap) == (every, ("localhost", forwarders[second].port)), timeout=60, interval=0.5)
    finally:
        brokers.stop()
        for forwarder in forwarders.values():
            forwarder.close()
