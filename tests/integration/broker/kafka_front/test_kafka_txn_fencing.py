"""KIP-447 against a real broker process with librdkafka (confluent-kafka): a transaction's consumed offsets carry its
consumer's group metadata, and a zombie copier (its consumer rebalanced away, or gone from the group) is refused
ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID: its transaction aborts, the group's offsets never move and its output is never
read, while the copier holding the group's current metadata commits.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer as RdConsumer
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka import Producer as RdProducer
from confluent_kafka import TopicPartition as RdTopicPartition

from halfmq.client import Producer
from tests.integration.broker.kafka_front.test_kafka_clients import KafkaBroker
from tests.integration.broker.kafka_front.test_kafka_consumed_offsets import committed, rd_consumer, sink_values, transactional
from tests.support.unique_names import unique

pytestmark = pytest.mark.timeout(180)

GROUP_TIMING = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 300}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBroker]:
    running = KafkaBroker(tmp_path_factory.mktemp("kafka-fencing"))
    running.process.start(timeout=60)
    try:
        yield running
    finally:
        running.process.stop()


def topics(broker: KafkaBroker, source: str, sink: str) -> None:
    """A source of two partitions (a rebalance of two consumers gives each one) holding a, b, c, d in partition 0."""
    with Producer(broker.url) as sdk:
        sdk.create_topic(source, queues=2)
        sdk.create_topic(sink, queues=1)
        for value in "abcd":
            sdk.send(source, value, queue_id=0)


def assigned(consumers: list[RdConsumer], partitions: int, seconds: float = 60) -> None:
    """Poll every consumer until each holds part of the ``partitions`` and together all of them (the rebalance done)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for consumer in consumers:
            consumer.poll(0.2)
        held = [len(c.assignment()) for c in consumers]
        if all(held) and sum(held) == partitions:
            return
    raise AssertionError(f"no settled assignment within {seconds}s: {[c.assignment() for c in consumers]}")


def zombie_refused(broker: KafkaBroker, source: str, sink: str, metadata: object) -> KafkaError:
    """A copier whose consumer's metadata is ``metadata`` copies and sends its offsets: the refusal, after it aborted."""
    zombie = transactional(broker, unique("zombie-tx"))
    zombie.begin_transaction()
    zombie.produce(sink, b"zombie's copy", partition=0)
    with pytest.raises(KafkaException) as refused:
        zombie.send_offsets_to_transaction([RdTopicPartition(source, 0, 2)], metadata, 30)
    error: KafkaError = refused.value.args[0]
    assert error.txn_requires_abort(), error  # abortable: the client aborts, and may go on after a new join
    zombie.abort_transaction(30)
    return error


def test_a_zombie_copier_after_a_rebalance_is_refused_and_the_live_one_commits(broker: KafkaBroker) -> None:
    source, sink, group = unique("KAFKA_447_IN"), unique("KAFKA_447_OUT"), unique("copiers")
    topics(broker, source, sink)
    first = rd_consumer(broker, group, **GROUP_TIMING)
    first.subscribe([source])
    assigned([first], 2)
    stale = first.consumer_group_metadata()  # generation 1, before the second copier joins

    second = rd_consumer(broker, group, **GROUP_TIMING)
    second.subscribe([source])
    try:
        assigned([first, second], 2)  # generation 2: the first copier's metadata of generation 1 is a zombie's
        assert zombie_refused(broker, source, sink, stale).code() == KafkaError.ILLEGAL_GENERATION
        assert committed(broker, group, source) < 0 and sink_values(broker, sink) == []  # nothing moved, nothing readable

        live: RdProducer = transactional(broker, unique("live-tx"))
        live.begin_transaction()
        live.produce(sink, b"live copy", partition=0)
        holder = first if any(p.partition == 0 for p in first.assignment()) else second
        live.send_offsets_to_transaction([RdTopicPartition(source, 0, 2)], holder.consumer_group_metadata(), 30)
        live.commit_transaction(30)
        assert committed(broker, group, source) == 2 and sink_values(broker, sink) == ["live copy"]

        first.close()  # leaves the group: its metadata now names a member the group no longer has
        assigned([second], 2)
        assert zombie_refused(broker, source, sink, stale).code() in (KafkaError.UNKNOWN_MEMBER_ID, KafkaError.ILLEGAL_GENERATION)
        assert committed(broker, group, source) == 2 and sink_values(broker, sink) == ["live copy"]
    finally:
        second.close()
