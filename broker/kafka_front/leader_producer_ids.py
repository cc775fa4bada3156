"""A follower's answer to an idempotent producer's InitProducerId: the producer id the leader hands out, asked over
the leader's HTTP front as the connection's principal (issue 47, leader_calls.py).

Kafka's clients send an idempotent InitProducerId (no transactional id) to their least-loaded node, and any Kafka
broker answers it; kafka-python keeps asking the same node while it is refused, so a follower must answer too. It
calls ``POST /v1/producer-ids`` on the leader (the use case the leader's own Kafka front calls,
ProducerTransactions.new_producer_id): the id belongs to the client's principal. The leader not there:
COORDINATOR_LOAD_IN_PROGRESS, which kafka-python and aiokafka both retry after their backoff without a coordinator
lookup (NOT_COORDINATOR and COORDINATOR_NOT_AVAILABLE make kafka-python look up a transaction coordinator with no key).
"""

from __future__ import annotations

from kafka import errors as kafka_errors

from .leader_calls import PostAs, ask_leader

PATH = "/v1/producer-ids"
LOAD_IN_PROGRESS = int(kafka_errors.CoordinatorLoadInProgressError.errno)


class LeaderProducerIds:
    def __init__(self, post_as: PostAs) -> None:
        self.post_as = post_as

    async def new_producer_id(self, token: str | None) -> tuple[int, int]:
        """(producer id, epoch) from the leader; a KafkaRefusal or BrokerError (answered with its code) otherwise."""
        body = await ask_leader(self.post_as, PATH, {}, token, unavailable=LOAD_IN_PROGRESS,
                                forbidden="the connection's principal may not have a producer id")
        return int(body["producer_id"]), int(body["epoch"])
