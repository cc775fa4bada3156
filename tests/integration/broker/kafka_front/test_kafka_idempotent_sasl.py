"""An idempotent Kafka producer signed in with SASL/PLAIN on a broker with auth on (the compose stack's case): its
InitProducerId gets a producer id bound to the connection's principal, and a principal that may publish nowhere is
refused with a Kafka error, never an unknown server error.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import KafkaError
from confluent_kafka import Producer as RdProducer
from kafka import KafkaProducer

from halfmq.client import Producer
from tests.conftest import TEST_BROKER_ENV
from tests.support.auth import write_auth_file
from tests.support.processes import BrokerProcess, free_port

pytestmark = pytest.mark.timeout(180)


def test_idempotent_producers_signed_in_with_sasl_get_a_producer_id_and_a_non_publisher_is_refused(tmp_path: Path) -> None:
    _, tokens = write_auth_file(tmp_path / "auth.json")
    kafka_port = free_port()
    broker = BrokerProcess(tmp_path / "data", tmp_path, {**TEST_BROKER_ENV, "HALFMQ_BROKER_KAFKA_PORT": str(kafka_port),
                                                         "HALFMQ_BROKER_AUTH_FILE": str(tmp_path / "auth.json")}).start(timeout=60)
    try:
        with Producer(broker.url, token=tokens["admin"]) as admin:
            admin.create_topic("ORDER_TOPIC", queues=1)

        def signed_in(user: str) -> dict[str, object]:
            return {"bootstrap.servers": f"127.0.0.1:{kafka_port}", "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                    "sasl.username": user, "sasl.password": tokens[user], "enable.idempotence": True, "message.timeout.ms": 20_000}

        delivered: list[object] = []
        librdkafka = RdProducer(signed_in("order"))
        librdkafka.produce("ORDER_TOPIC", b"idempotent over sasl", partition=0, on_delivery=lambda err, msg: delivered.append(err or "ok"))
        assert librdkafka.flush(30) == 0
        assert delivered == ["ok"]

        python = KafkaProducer(bootstrap_servers=f"127.0.0.1:{kafka_port}", security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                               sasl_plain_username="order", sasl_plain_password=tokens["order"], enable_idempotence=True)
        assert python.send("ORDER_TOPIC", b"kafka-python too", partition=0).get(timeout=30).offset == 1
        python.close()

        refused: list[object] = []
        reader = RdProducer({**signed_in("credit"), "message.timeout.ms": 5000})  # may subscribe, may publish nowhere: no producer id
        reader.produce("ORDER_TOPIC", b"never", partition=0, on_delivery=lambda err, msg: refused.append(err))
        reader.flush(30)
        assert len(refused) == 1 and isinstance(refused[0], KafkaError)
        assert refused[0].code() != KafkaError.UNKNOWN, refused[0]
    finally:
        broker.stop()
    assert "KeyError" not in next(tmp_path.glob("broker-*.log")).read_text()  # no request failed inside the front
