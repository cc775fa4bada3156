"""A set's follower creates a topic a Metadata request names, as the leader would: over the leader's HTTP front, as the
connection's principal (issue 47).

Kafka's clients send Metadata to their least-loaded broker, and one relying on auto-creation (kafka-python's and
aiokafka's producers, librdkafka with ``allow.auto.create.topics``) waits on a topic that never comes when that broker
is a follower that only says UNKNOWN_TOPIC_OR_PARTITION. The follower calls ``POST /v1/topics`` on the leader (the
route of the leader's own create, the use case the leader's Kafka front calls for Metadata: ``admin`` on the topic,
durable when answered) with the connection's own bearer token (sasl.connection_token; none with auth off), so the leader
checks the client's rights. The follower keeps nothing per topic: it answers with the partitions the leader's answer
names, and later Metadata requests read the topic from its own replica.

The leader not there (leader_calls.py): LEADER_NOT_AVAILABLE for that topic, which every client retries after
refreshing its metadata; its refusals are the codes the leader's own front would answer.
"""

from __future__ import annotations

from kafka import errors as kafka_errors

from .leader_calls import PostAs, ask_leader

PATH = "/v1/topics"
LEADER_NOT_AVAILABLE = int(kafka_errors.LeaderNotAvailableError.errno)


class LeaderTopics:
    def __init__(self, post_as: PostAs) -> None:
        self.post_as = post_as

    async def create(self, name: str, token: str | None) -> int:
        """``name`` created on the leader with the broker's default queue count (or found there); its queue count. A
        KafkaRefusal (LEADER_NOT_AVAILABLE) or the leader's BrokerError otherwise."""
        body = await ask_leader(self.post_as, PATH, {"name": name}, token, unavailable=LEADER_NOT_AVAILABLE,
                                forbidden=f"the connection's principal may not create topic {name!r}")
        return len(body["queues"])
