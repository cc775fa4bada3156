from types import SimpleNamespace

from halfmq.broker.kafka_front.admin_handlers import BROKER_RESOURCE, TOPIC_RESOURCE, described_configs
from halfmq.wire import TopicInfo


def test_a_topic_s_configs_are_the_broker_s_retention_and_message_size_under_kafka_s_topic_names() -> None:
    settings = SimpleNamespace(retention=3600.0, retention_bytes=None, max_message_size=4096)
    assert {name: value for name, value, _ in described_configs(settings, TOPIC_RESOURCE)} == {
        "retention.ms": "3600000", "retention.bytes": "-1", "cleanup.policy": "delete", "max.message.bytes": "4096"}


def test_the_broker_s_configs_carry_kafka_s_broker_names() -> None:
    settings = SimpleNamespace(retention=1.5, retention_bytes=10, max_message_size=1)
    assert [name for name, _, _ in described_configs(settings, BROKER_RESOURCE)] == [
        "log.retention.ms", "log.retention.bytes", "log.cleanup.policy", "message.max.bytes"]
    assert described_configs(settings, BROKER_RESOURCE)[0][1] == "1500"


def test_a_topic_with_its_own_retention_answers_its_own_values_and_the_broker_s_for_the_rest() -> None:
    settings = SimpleNamespace(retention=3600.0, retention_bytes=None, max_message_size=4096)
    own = TopicInfo(name="T", queues=[], retention_ms=5000)
    assert {name: value for name, value, _ in described_configs(settings, TOPIC_RESOURCE, own)} == {
        "retention.ms": "5000", "retention.bytes": "-1", "cleanup.policy": "delete", "max.message.bytes": "4096"}
    sized = TopicInfo(name="T", queues=[], retention_bytes=10)
    assert {name: value for name, value, _ in described_configs(settings, TOPIC_RESOURCE, sized)}["retention.bytes"] == "10"
