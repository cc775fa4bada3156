"""On a broker set each node advertises its own Kafka address (HALFMQ_BROKER_KAFKA_ADVERTISE), and Kafka's clients are
sent to the leader's: before a kill -9 of the leader, and after it to the new leader's.

Each node's Kafka listener sits behind a TCP forwarder of its own (a published container port, as in
docker-compose.replicated.yml) whose address the node advertises; clients bootstrap with the three forwarders.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import Producer

from tests.support.broker_set import BrokerSet
from tests.support.etcd import EtcdProcess
from tests.support.lossy_proxy import LossyProxy
from tests.support.processes import free_port
from tests.support.waiting import wait_for

pytestmark = pytest.mark.timeout(240)


def advertised_brokers(bootstrap: str) -> list[tuple[str, int]]:
    """The brokers a new client's Metadata names (a new client: no address cached from before)."""
    producer = Producer({"bootstrap.servers": bootstrap, "socket.timeout.ms": 5000})
    try:
        return sorted((b.host, b.port) for b in producer.list_topics(timeout=10).brokers.values())
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
        assert wait_for(lambda: advertised_brokers(bootstrap) == [("localhost", forwarders[first].port)], timeout=30, interval=0.5)

        producer = Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": 30_000})
        delivered: list[str] = []
        producer.produce("KADV", b"through the leader's advertised address", partition=0,
                         on_delivery=lambda err, msg: delivered.append("error" if err else "ok"))
        assert producer.flush(30) == 0 and delivered == ["ok"]

        brokers.nodes[first].kill9()
        second = brokers.leader(not_=first, timeout=60)
        assert wait_for(lambda: advertised_brokers(bootstrap) == [("localhost", forwarders[second].port)], timeout=60, interval=0.5)
    finally:
        brokers.stop()
        for forwarder in forwarders.values():
            forwarder.close()
