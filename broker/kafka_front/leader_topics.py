"""A set's follower creates a topic a Metadata request names, as the leader would: over the leader's HTTP front, as the
connection's principal (issue 47).

Kafka's clients send Metadata to their least-loaded broker, and one relying on auto-creation (kafka-python's and
aiokafka's producers, librdkafka with ``allow.auto.create.topics``) waits on a topic that never comes when that broker
is a follower that only says UNKNOWN_TOPIC_OR_PARTITION. The follower calls ``POST /v1/topics`` on the leader (the
route of the leader's own create, the use case the leader's Kafka front calls for Metadata: ``admin`` on the topic,
durable when answered) with the connection's own bearer token (sasl.connection_token; none with auth off), so the leader
checks the client's rights. The follower keeps nothing per topic: it answers with the partitions the leader's answer
names, and later Metadata requests read the topic from its own replica.

The leader not known, unreachable, moved (421) or busy: LEADER_NOT_AVAILABLE for that topic, which every client
retries after refreshing its metadata. The leader's refusals (a problem+json ``code``: 401, 403, an invalid name) are
raised as the same halfmq error, so the client gets the code the leader's own front would answer.
"""

from __future__ import annotations

import logging
from typing import Any

from kafka import errors as kafka_errors

from halfmq import errors
from halfmq.broker.cluster.peers import PeerError

from .errors import ServedElsewhere
from .leader_producer_ids import RETRIABLE_STATUSES, PostAs

log = logging.getLogger(__name__)

PATH = "/v1/topics"
LEADER_NOT_AVAILABLE = int(kafka_errors.LeaderNotAvailableError.errno)


class LeaderTopics:
    def __init__(self, post_as: PostAs) -> None:
        self.post_as = post_as

    async def create(self, name: str, token: str | None) -> int:
        """``name`` created on the leader with the broker's default queue count (or found there); its queue count. A
        KafkaRefusal (LEADER_NOT_AVAILABLE) or the leader's BrokerError otherwise."""
        try:
            answer = await self.post_as(PATH, {"name": name}, token)
        except (LookupError, PeerError) as exc:  # no other leader known, unreachable, timed out: the client asks again
            raise ServedElsewhere(LEADER_NOT_AVAILABLE, f"the set's leader is not reachable: {exc}") from exc
        status = int(answer.status_code)
        if status in (200, 201):
            return len(answer.json()["queues"])
        if status in RETRIABLE_STATUSES:
            raise ServedElsewhere(LEADER_NOT_AVAILABLE, f"the set's leader answered {status}")
        problem = _problem(answer)
        if status == 401:
            raise errors.Unauthenticated("the leader did not accept the connection's token")
        if status == 403:
            raise errors.AccessDenied(f"the connection's principal may not create topic {name!r}")
        log.info("Kafka Metadata: the leader refused to create topic %r: %d %r", name, status, problem)
        raise errors.error_class_for(str(problem.get("code", "")))(str(problem.get("detail", f"the set's leader answered {status}")))


def _problem(answer: Any) -> dict[str, Any]:
    """The leader's problem+json body, or nothing when it is not one."""
    try:
        body = answer.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}
