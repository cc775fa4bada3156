"""Kafka's admin clients set a topic's retention on a real broker process (CreateTopics' configs, AlterConfigs,
IncrementalAlterConfigs) through the same use cases as ``POST`` and ``PATCH /v1/topics``: read back over HTTP and with
DescribeConfigs; a bad value or a config halfmq does not honour is refused INVALID_CONFIG and changes nothing; the
broker's configs and other resource types are refused with their own error; only an administrator changes a topic,
and the change is audited.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource, NewTopic, ResourceType

from tests.integration.broker.kafka_front.test_kafka_clients import KafkaBroker
from tests.support.auth import write_auth_file
from tests.support.unique_names import unique

pytestmark = pytest.mark.timeout(180)
DAY_MS = 86_400_000


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBroker]:
    running = KafkaBroker(tmp_path_factory.mktemp("kafka-topic-configs"), {"HALFMQ_BROKER_RETENTION": "1d"})
    running.process.start(timeout=60)
    try:
        yield running
    finally:
        running.process.stop()


@pytest.fixture
def admin(broker: KafkaBroker) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap})


def retention_over_http(broker: KafkaBroker, topic: str) -> tuple[int | None, int | None]:
    answer = httpx.get(f"{broker.url}/v1/topics/{topic}")
    answer.raise_for_status()
    return answer.json().get("retention_ms"), answer.json().get("retention_bytes")


def described(admin: AdminClient, topic: str) -> dict[str, Any]:
    [future] = admin.describe_configs([ConfigResource(ResourceType.TOPIC, topic)], request_timeout=30).values()
    return future.result(timeout=30)


def error_of(future: Any) -> int:
    with pytest.raises(KafkaException) as refused:
        future.result(timeout=30)
    return int(refused.value.args[0].code())


def create(admin: AdminClient, topic: str, config: dict[str, str]) -> Any:
    [future] = admin.create_topics([NewTopic(topic, num_partitions=1, config=config)], request_timeout=30).values()
    return future


def incremental(admin: AdminClient, topic: str, *changes: tuple[str, str | None, AlterConfigOpType],
                resource_type: ResourceType = ResourceType.TOPIC) -> Any:
    entries = [ConfigEntry(name, value, incremental_operation=op) for name, value, op in changes]
    [future] = admin.incremental_alter_configs([ConfigResource(resource_type, topic, incremental_configs=entries)],
                                               request_timeout=30).values()
    return future


def test_a_topic_created_with_retention_configs_has_them_as_its_own(broker: KafkaBroker, admin: AdminClient) -> None:
    topic = unique("KAFKA_CREATED_RETENTION")
    create(admin, topic, {"retention.ms": "60000", "retention.bytes": "1048576", "cleanup.policy": "delete"}).result(timeout=30)
    assert retention_over_http(broker, topic) == (60000, 1048576)
    entries = described(admin, topic)
    assert (entries["retention.ms"].value, entries["retention.bytes"].value) == ("60000", "1048576")
    assert entries["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert not entries["retention.ms"].is_read_only and entries["cleanup.policy"].is_read_only


@pytest.mark.parametrize("config", [{"retention.ms": "ten minutes"}, {"retention.ms": "10"}, {"retention.ms": "-1"},
                                    {"segment.bytes": "1024"}, {"cleanup.policy": "compact"}])
def test_a_topic_asked_with_a_bad_or_unhonoured_config_is_refused_and_not_created(broker: KafkaBroker, admin: AdminClient,
                                                                                  config: dict[str, str]) -> None:
    topic = unique("KAFKA_REFUSED_CONFIG")
    assert error_of(create(admin, topic, config)) == KafkaError.INVALID_CONFIG
    assert httpx.get(f"{broker.url}/v1/topics/{topic}").status_code == 404


def test_an_incremental_change_sets_and_deletes_the_named_limits_and_keeps_the_others(broker: KafkaBroker,
                                                                                      admin: AdminClient) -> None:
    topic = unique("KAFKA_ALTERED")
    create(admin, topic, {"retention.ms": "60000", "retention.bytes": "1048576"}).result(timeout=30)
    incremental(admin, topic, ("retention.ms", "120000", AlterConfigOpType.SET)).result(timeout=30)
    assert retention_over_http(broker, topic) == (120000, 1048576)
    incremental(admin, topic, ("retention.bytes", None, AlterConfigOpType.DELETE)).result(timeout=30)
    assert retention_over_http(broker, topic) == (120000, None)
    entries = described(admin, topic)
    assert (entries["retention.ms"].value, entries["retention.bytes"].value) == ("120000", "-1")
    assert entries["retention.bytes"].source == ConfigSource.STATIC_BROKER_CONFIG.value


@pytest.mark.parametrize(("change", "code"), [
    (("retention.ms", "5", AlterConfigOpType.SET), KafkaError.INVALID_CONFIG),
    (("retention.ms", "soon", AlterConfigOpType.SET), KafkaError.INVALID_CONFIG),
    (("max.message.bytes", "10", AlterConfigOpType.SET), KafkaError.INVALID_CONFIG),
    (("segment.ms", "1000", AlterConfigOpType.SET), KafkaError.INVALID_CONFIG),
    (("retention.ms", "1000", AlterConfigOpType.APPEND), KafkaError.INVALID_REQUEST),
])
def test_a_bad_incremental_change_is_refused_and_changes_nothing(broker: KafkaBroker, admin: AdminClient,
                                                                 change: tuple[str, str, AlterConfigOpType], code: int) -> None:
    topic = unique("KAFKA_UNALTERED")
    create(admin, topic, {"retention.ms": "60000"}).result(timeout=30)
    assert error_of(incremental(admin, topic, ("retention.bytes", "2048", AlterConfigOpType.SET), change)) == code
    assert retention_over_http(broker, topic) == (60000, None)


@pytest.mark.filterwarnings("ignore:alter_configs has been deprecated")
def test_a_whole_config_set_replaces_the_topic_s_limits(broker: KafkaBroker, admin: AdminClient) -> None:
    """AlterConfigs: a limit not named goes back to the broker's."""
    topic = unique("KAFKA_REPLACED")
    create(admin, topic, {"retention.ms": "60000", "retention.bytes": "1048576"}).result(timeout=30)
    [future] = admin.alter_configs([ConfigResource(ResourceType.TOPIC, topic, set_config={"retention.bytes": "4096"})],
                                   request_timeout=30).values()
    future.result(timeout=30)
    assert retention_over_http(broker, topic) == (None, 4096)
    assert described(admin, topic)["retention.ms"].value == str(DAY_MS)


def test_a_validate_only_change_checks_and_changes_nothing(broker: KafkaBroker, admin: AdminClient) -> None:
    topic = unique("KAFKA_VALIDATED")
    create(admin, topic, {"retention.ms": "60000"}).result(timeout=30)
    entry = ConfigEntry("retention.ms", "120000", incremental_operation=AlterConfigOpType.SET)
    [future] = admin.incremental_alter_configs([ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[entry])],
                                               validate_only=True, request_timeout=30).values()
    future.result(timeout=30)
    assert retention_over_http(broker, topic) == (60000, None)


def test_the_broker_s_configs_an_unknown_topic_and_other_resources_are_refused_with_their_own_error(admin: AdminClient) -> None:
    assert error_of(incremental(admin, "0", ("log.retention.ms", "1000", AlterConfigOpType.SET),
                                resource_type=ResourceType.BROKER)) == KafkaError.INVALID_CONFIG
    assert error_of(incremental(admin, unique("NO_SUCH_TOPIC"), ("retention.ms", "60000", AlterConfigOpType.SET))
                    ) == KafkaError.UNKNOWN_TOPIC_OR_PART
    assert error_of(incremental(admin, "some_group", ("retention.ms", "60000", AlterConfigOpType.SET),
                                resource_type=ResourceType.GROUP)) == KafkaError.INVALID_REQUEST


def test_only_an_administrator_changes_a_topic_s_retention_and_the_change_is_audited(tmp_path: Path) -> None:
    _, tokens = write_auth_file(tmp_path / "auth.json")
    broker = KafkaBroker(tmp_path, {"HALFMQ_BROKER_AUTH_FILE": str(tmp_path / "auth.json")})
    broker.process.start(timeout=60)
    try:
        def as_(name: str) -> AdminClient:
            return AdminClient({"bootstrap.servers": broker.bootstrap, "security.protocol": "SASL_PLAINTEXT",
                                "sasl.mechanism": "PLAIN", "sasl.username": name, "sasl.password": tokens[name]})

        admin, mallory = as_("admin"), as_("mallory")
        assert error_of(create(mallory, "MALLORY_OWN", {"retention.ms": "60000"})) == KafkaError.TOPIC_AUTHORIZATION_FAILED
        create(admin, "MALLORY_OWN", {"retention.ms": "60000"}).result(timeout=30)
        assert error_of(incremental(mallory, "MALLORY_OWN", ("retention.ms", "1000", AlterConfigOpType.SET))
                        ) == KafkaError.TOPIC_AUTHORIZATION_FAILED  # publish and subscribe, not admin
        entry = ConfigEntry("retention.ms", "1000", incremental_operation=AlterConfigOpType.SET)
        [checked] = mallory.incremental_alter_configs([ConfigResource(ResourceType.TOPIC, "MALLORY_OWN", incremental_configs=[entry])],
                                                      validate_only=True, request_timeout=30).values()
        assert error_of(checked) == KafkaError.TOPIC_AUTHORIZATION_FAILED
        incremental(admin, "MALLORY_OWN", ("retention.ms", "120000", AlterConfigOpType.SET)).result(timeout=30)
        headers = {"authorization": f"Bearer {tokens['admin']}"}
        assert httpx.get(f"{broker.url}/v1/topics/MALLORY_OWN", headers=headers).json()["retention_ms"] == 120000
        log = broker.process.log_path.read_text()
        assert "principal=mallory action=admin resource=topic:MALLORY_OWN result=deny path=kafka:IncrementalAlterConfigs" in log
        assert "principal=admin action=admin resource=topic:MALLORY_OWN result=allow path=kafka:IncrementalAlterConfigs" in log
    finally:
        broker.process.stop()


def test_kafka_python_s_admin_client_creates_a_topic_with_retention_and_alters_it(broker: KafkaBroker) -> None:
    from kafka.admin import ConfigResource as KafkaPythonResource
    from kafka.admin import ConfigResourceType, KafkaAdminClient
    from kafka.errors import InvalidConfigurationError

    topic = unique("KAFKA_PYTHON_RETENTION")
    client = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=30_000)
    try:
        client.create_topics({topic: {"num_partitions": 1, "configs": {"retention.ms": "60000"}}})
        assert retention_over_http(broker, topic) == (60000, None)
        client.alter_configs([KafkaPythonResource(ConfigResourceType.TOPIC, topic, configs={"retention.bytes": "8192"})])
        assert retention_over_http(broker, topic) == (60000, 8192)
        refused = client.alter_configs([KafkaPythonResource(ConfigResourceType.TOPIC, topic, configs={"retention.ms": "1"})])
        assert str(refused["topic"][topic]).startswith(f"[Error {InvalidConfigurationError.errno}]")
        assert retention_over_http(broker, topic) == (60000, 8192)
    finally:
        client.close()
