"""The Kafka front sends clients to the address it advertises (HALFMQ_BROKER_KAFKA_ADVERTISE), not to the one it binds.

A real broker process whose Kafka listener binds one port while a TCP forwarder on another port stands in for a
published container port or a NAT, and the broker advertises the forwarder's address: Kafka's own clients, given the
forwarder as their bootstrap, are told that address by Metadata and FindCoordinator, and produce, consume in a group
and commit through it. A malformed advertised address stops the broker at start with one clear line.
"""

from __future__ import annotations

import socket
import struct
import subprocess
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from kafka.protocol.metadata import FindCoordinatorRequest, FindCoordinatorResponse

from tests.conftest import TEST_BROKER_ENV
from tests.support.lossy_proxy import LossyProxy
from tests.support.processes import BrokerProcess, free_port, halfmq_command
from tests.support.unique_names import unique

pytestmark = pytest.mark.timeout(180)


def test_kafkas_clients_are_sent_to_the_advertised_address_and_produce_and_consume_through_it(tmp_path: Path) -> None:
    kafka_port = free_port()
    forwarder = LossyProxy(kafka_port, match="", drops=0)  # forwards every byte both ways, like a published port
    broker = BrokerProcess(tmp_path / "data", tmp_path, {**TEST_BROKER_ENV, "HALFMQ_BROKER_KAFKA_PORT": str(kafka_port),
                                                         "HALFMQ_BROKER_KAFKA_ADVERTISE": f"localhost:{forwarder.port}"}).start(timeout=60)
    try:
        bootstrap = f"127.0.0.1:{forwarder.port}"
        topic = unique("ADVERTISED")
        producer = Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": 30_000})
        delivered: list[str] = []
        for i in range(5):
            producer.produce(topic, f"m{i}".encode(), partition=0, on_delivery=lambda err, msg: delivered.append("error" if err else "ok"))
        assert producer.flush(30) == 0
        assert delivered == ["ok"] * 5
        brokers = producer.list_topics(topic, timeout=10).brokers  # Metadata
        assert [(b.host, b.port) for b in brokers.values()] == [("localhost", forwarder.port)]

        group = unique("advertised-group")
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                             "enable.auto.commit": False})
        try:
            consumer.subscribe([topic])
            got: list[bytes] = []
            for _ in range(60):
                message = consumer.poll(1.0)
                if message is not None and message.error() is None:
                    got.append(message.value())
                if len(got) == 5:
                    break
            assert got == [f"m{i}".encode() for i in range(5)]
            consumer.commit(asynchronous=False)  # the group's coordinator, too, is reached at the advertised address
            committed = consumer.committed(consumer.assignment(), timeout=10)
            assert [p.offset for p in committed if p.partition == 0] == [5]
            assert find_coordinator(forwarder.port, group) == ("localhost", forwarder.port)
        finally:
            consumer.close()
    finally:
        broker.stop()
        forwarder.close()


def find_coordinator(port: int, group: str) -> tuple[str, int]:
    """FindCoordinator v1 for ``group`` on a raw connection: the host and port the answer sends the client to."""
    request = FindCoordinatorRequest(version=1, key=group, key_type=0)
    request.with_header(correlation_id=1, client_id="raw")
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(bytes(request.encode(framed=True, header=True)))
        answer = connection.makefile("rb")
        payload = answer.read(struct.unpack(">i", answer.read(4))[0])
    decoded = FindCoordinatorResponse.decode(payload[4:], version=1)  # after the correlation id
    assert decoded.error_code == 0
    return decoded.host, decoded.port


@pytest.mark.parametrize("advertised", ["broker", "0.0.0.0:9092", "broker:70000"])
def test_a_malformed_advertised_address_stops_the_broker_at_start_in_one_line(tmp_path: Path, advertised: str) -> None:
    done = subprocess.run(halfmq_command("broker", "--port", str(free_port()), "--data-dir", str(tmp_path / "d")),
                          env={**TEST_BROKER_ENV, "PATH": "/usr/bin:/bin", "HALFMQ_BROKER_KAFKA_PORT": str(free_port()),
                               "HALFMQ_BROKER_KAFKA_ADVERTISE": advertised},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 6, done.stderr[-2000:]
    assert "kafka_advertise" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "d").exists()  # refused before anything was opened
