"""A set with auth on: an idempotent kafka-python producer signed in with SASL/PLAIN and given one follower's address
alone gets its producer id from that follower (which asks the leader as the producer's principal, with its own token)
and produces to the leader; a principal that may publish nowhere is refused with a Kafka error there, never an
unknown server error, and never given an id on the cluster token's rights.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from kafka import KafkaProducer
from kafka import errors as kafka_errors

from halfmq.client import Producer
from tests.support.auth import write_auth_file
from tests.support.broker_set import BrokerSet
from tests.support.etcd import EtcdProcess
from tests.support.processes import free_port

from .test_kafka_front_on_a_set import every_member_named

pytestmark = pytest.mark.timeout(240)


def test_an_idempotent_sasl_producer_bootstrapped_at_a_follower_gets_its_id_as_its_own_principal(etcd: EtcdProcess, tmp_path: Path) -> None:
    _, tokens = write_auth_file(tmp_path / "auth.json")
    (tmp_path / "cluster-token").write_text(tokens["admin"])
    brokers = BrokerSet(etcd, tmp_path, token=tokens["admin"], env={
        "HALFMQ_BROKER_AUTH_FILE": str(tmp_path / "auth.json"), "HALFMQ_BROKER_CLUSTER_TOKEN_FILE": str(tmp_path / "cluster-token")})
    ports = [free_port() for _ in brokers.nodes]
    for node, port in zip(brokers.nodes.values(), ports, strict=True):
        node.env["HALFMQ_BROKER_KAFKA_PORT"] = str(port)
    brokers.start()
    try:
        every_member_named([f"127.0.0.1:{port}" for port in ports], sasl=("admin", tokens["admin"]))
        leader = brokers.leader()
        follower = next(n for n in brokers.nodes if n != leader)
        with Producer(brokers.nodes[leader].url, token=tokens["admin"]) as admin:
            admin.create_topic("ORDER_TOPIC", queues=1)
        address = f"127.0.0.1:{ports[list(brokers.nodes).index(follower)]}"

        def signed_in(user: str, **more: object) -> KafkaProducer:
            return KafkaProducer(bootstrap_servers=[address], security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                                 sasl_plain_username=user, sasl_plain_password=tokens[user], enable_idempotence=True, acks="all",
                                 **more)

        order = signed_in("order")
        assert [order.send("ORDER_TOPIC", b"o-%d" % i, partition=0).get(timeout=60).offset for i in range(5)] == list(range(5))
        order.close()

        credit = signed_in("credit", max_block_ms=15_000)  # may subscribe, may publish nowhere: no producer id
        with pytest.raises(kafka_errors.KafkaError) as refused:
            credit.send("ORDER_TOPIC", b"never", partition=0).get(timeout=30)
        credit.close(timeout=5)
        assert not isinstance(refused.value, kafka_errors.UnknownError), refused.value
    finally:
        brokers.stop()
