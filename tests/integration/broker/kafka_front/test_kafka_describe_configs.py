"""Kafka's admin clients read a topic's and the broker's configuration (DescribeConfigs) from a real broker process:
the broker's own settings under Kafka's names (a topic's own retention where it has one), an unknown topic refused,
and a principal only sees what it may describe.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, ResourceType

from halfmq.client import Producer
from tests.integration.broker.kafka_front.test_kafka_clients import KafkaBroker
from tests.support.auth import write_auth_file
from tests.support.unique_names import unique

pytestmark = pytest.mark.timeout(180)
SETTINGS = {"HALFMQ_BROKER_RETENTION": "2d", "HALFMQ_BROKER_RETENTION_BYTES": "1073741824",
            "HALFMQ_BROKER_MAX_MESSAGE_SIZE": "1048576"}


def configs_of(admin: AdminClient, resource: ConfigResource) -> dict[str, str]:
    [future] = admin.describe_configs([resource], request_timeout=30).values()
    return {name: entry.value for name, entry in future.result(timeout=30).items()}


def refusal_of(admin: AdminClient, resource: ConfigResource) -> int:
    [future] = admin.describe_configs([resource], request_timeout=30).values()
    with pytest.raises(KafkaException) as refused:
        future.result(timeout=30)
    return int(refused.value.args[0].code())


def test_a_topic_s_and_the_broker_s_configuration_are_the_broker_s_settings_and_an_unknown_topic_is_refused(tmp_path: Path) -> None:
    broker = KafkaBroker(tmp_path, SETTINGS)
    broker.process.start(timeout=60)
    try:
        topic = unique("KAFKA_CONFIGS")
        with Producer(broker.url) as sdk:
            sdk.create_topic(topic, queues=2)
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        assert configs_of(admin, ConfigResource(ResourceType.TOPIC, topic)) == {
            "retention.ms": str(2 * 86400 * 1000), "retention.bytes": "1073741824", "cleanup.policy": "delete",
            "max.message.bytes": "1048576"}
        assert configs_of(admin, ConfigResource(ResourceType.BROKER, "0"))["message.max.bytes"] == "1048576"
        own = unique("KAFKA_OWN_RETENTION")
        httpx.post(f"{broker.url}/v1/topics", json={"name": own, "queues": 1, "retention_ms": 60_000}).raise_for_status()
        [future] = admin.describe_configs([ConfigResource(ResourceType.TOPIC, own)], request_timeout=30).values()
        entries = future.result(timeout=30)
        assert (entries["retention.ms"].value, entries["retention.bytes"].value) == ("60000", "1073741824")
        assert entries["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
        assert refusal_of(admin, ConfigResource(ResourceType.TOPIC, unique("NO_SUCH_TOPIC"))) == KafkaError.UNKNOWN_TOPIC_OR_PART
    finally:
        broker.process.stop()


def test_a_principal_reads_the_configuration_of_the_topics_it_may_describe_only(tmp_path: Path) -> None:
    _, tokens = write_auth_file(tmp_path / "auth.json")
    broker = KafkaBroker(tmp_path, {"HALFMQ_BROKER_AUTH_FILE": str(tmp_path / "auth.json")})
    broker.process.start(timeout=60)
    try:
        with Producer(broker.url, token=tokens["admin"]) as admin_sdk:
            admin_sdk.create_topic("MALLORY_KAFKA", queues=1)
            admin_sdk.create_topic("ORDER_TOPIC", queues=1)
        mallory = AdminClient({"bootstrap.servers": broker.bootstrap, "security.protocol": "SASL_PLAINTEXT",
                               "sasl.mechanism": "PLAIN", "sasl.username": "mallory", "sasl.password": tokens["mallory"]})
        assert configs_of(mallory, ConfigResource(ResourceType.TOPIC, "MALLORY_KAFKA"))["cleanup.policy"] == "delete"
        assert refusal_of(mallory, ConfigResource(ResourceType.TOPIC, "ORDER_TOPIC")) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    finally:
        broker.process.stop()
