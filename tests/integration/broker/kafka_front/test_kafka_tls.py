"""The Kafka listener of a broker serving HTTPS speaks TLS with the same certificate (broker/kafka_front/front.py).

A real broker process with auth on, a throwaway CA made in the test; Kafka's own clients connect with SASL_SSL and the
CA, so a principal's token never crosses in the clear; a client that speaks plaintext gets nothing it can read.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer as KafkaProducer
from kafka import KafkaConsumer, TopicPartition

from halfmq.client import Producer
from tests.conftest import TEST_BROKER_ENV
from tests.support.auth import write_auth_file
from tests.support.processes import BrokerProcess, free_port
from tests.support.tls import make_ca_and_server_cert

pytestmark = pytest.mark.timeout(180)


def test_kafkas_clients_reach_a_tls_broker_over_sasl_ssl_and_a_plaintext_client_reads_nothing(tmp_path: Path) -> None:
    tls = make_ca_and_server_cert(tmp_path / "tls")
    _, tokens = write_auth_file(tmp_path / "auth.json")
    kafka_port = free_port()
    broker = BrokerProcess(tmp_path / "data", tmp_path, {
        **TEST_BROKER_ENV, "HALFMQ_BROKER_KAFKA_PORT": str(kafka_port), "HALFMQ_BROKER_AUTH_FILE": str(tmp_path / "auth.json"),
        "HALFMQ_BROKER_TLS_CERT_FILE": str(tls.cert), "HALFMQ_BROKER_TLS_KEY_FILE": str(tls.key)}, ca_file=tls.ca).start(timeout=60)
    try:
        with Producer(broker.url, token=tokens["admin"], verify=str(tls.ca)) as admin:
            admin.create_topic("ORDER_TOPIC", queues=1)
        producer = KafkaProducer({
            "bootstrap.servers": f"127.0.0.1:{kafka_port}", "security.protocol": "SASL_SSL", "ssl.ca.location": str(tls.ca),
            "sasl.mechanism": "PLAIN", "sasl.username": "order", "sasl.password": tokens["order"], "message.timeout.ms": 30_000})
        delivered: list[str] = []
        producer.produce("ORDER_TOPIC", b"over tls", partition=0,
                         on_delivery=lambda err, msg: delivered.append("error" if err else "ok"))
        assert producer.flush(30) == 0
        assert delivered == ["ok"]

        consumer = KafkaConsumer(bootstrap_servers=f"127.0.0.1:{kafka_port}", security_protocol="SASL_SSL",
                                 ssl_cafile=str(tls.ca), sasl_mechanism="PLAIN", sasl_plain_username="admin",
                                 sasl_plain_password=tokens["admin"], consumer_timeout_ms=10_000, enable_auto_commit=False)
        consumer.assign([TopicPartition("ORDER_TOPIC", 0)])
        consumer.seek_to_beginning()
        assert [record.value for record in consumer][:1] == [b"over tls"]
        consumer.close()

        with Producer(broker.url, token=tokens["admin"], verify=str(tls.ca)) as admin:  # the same log over HTTPS
            assert [m.body for m in admin.read("ORDER_TOPIC", 0, 0, max=5).messages] == ["over tls"]

        with socket.create_connection(("127.0.0.1", kafka_port), timeout=10) as plain:  # a Kafka frame in the clear
            plain.sendall(b"\x00\x00\x00\x0a" + b"\x00\x12\x00\x00\x00\x00\x00\x01\x00\x00")  # ApiVersions v0
            deadline, answer = time.monotonic() + 10, b""
            while time.monotonic() < deadline and (chunk := plain.recv(4096)):
                answer += chunk
            assert not answer.startswith(b"\x00\x00")  # no Kafka frame: a TLS alert, or the connection closed
    finally:
        broker.stop()
