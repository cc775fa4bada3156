"""A follower's answer to an idempotent producer's InitProducerId: the producer id the leader hands out, asked over
the leader's HTTP front as the connection's principal (issue 47).

Kafka's clients send an idempotent InitProducerId (no transactional id) to their least-loaded node, and any Kafka
broker answers it; kafka-python keeps asking the same node while it is refused, so a follower must answer too. It
calls ``POST /v1/producer-ids`` on the leader (the use case the leader's own Kafka front calls,
ProducerTransactions.new_producer_id) with the connection's own bearer token (its SASL/PLAIN password, kept in memory
for the connection's life, sasl.connection_token), never the cluster's: the id belongs to the client's principal, and
the leader checks the client's rights, not the node's. With auth off no token is sent.

The leader not known, unreachable, or no longer leading (421), or busy: COORDINATOR_LOAD_IN_PROGRESS, which kafka-python
and aiokafka both retry after their backoff without a coordinator lookup (NOT_COORDINATOR and COORDINATOR_NOT_AVAILABLE
make kafka-python look up a transaction coordinator with no key). 401 and 403: the codes the leader's own front answers
for the same refusals (error_codes.kafka_code of Unauthenticated and AccessDenied).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from kafka import errors as kafka_errors

from halfmq import errors
from halfmq.broker.cluster.peers import PeerError

from .errors import ServedElsewhere

log = logging.getLogger(__name__)

PATH = "/v1/producer-ids"
RETRIABLE_STATUSES = frozenset({421, 429, 500, 502, 503, 504})
"""The leader moved (421), is busy or failing: asked again by the client after its backoff."""
LOAD_IN_PROGRESS = int(kafka_errors.CoordinatorLoadInProgressError.errno)

PostAs = Callable[[str, Any, str | None], Awaitable[Any]]
"""(path, JSON body, bearer token or None) -> the leader's answer (peers.PeerResponse): cluster.node.ClusterNode's
``post_to_leader_as``; LookupError when no other member leads, peers.PeerError when the call got no answer."""


class LeaderProducerIds:
    def __init__(self, post_as: PostAs) -> None:
        self.post_as = post_as

    async def new_producer_id(self, token: str | None) -> tuple[int, int]:
        """(producer id, epoch) from the leader; a KafkaRefusal or BrokerError (answered with its code) otherwise."""
        try:
            answer = await self.post_as(PATH, {}, token)
        except (LookupError, PeerError) as exc:  # no other leader known, unreachable, timed out: the client asks again
            log.info("Kafka InitProducerId: the leader did not hand out a producer id (%s)", exc)
            raise ServedElsewhere(LOAD_IN_PROGRESS, f"the set's leader is not reachable: {exc}") from exc
        status = int(answer.status_code)
        if status in (200, 201):
            body = answer.json()
            return int(body["producer_id"]), int(body["epoch"])
        if status == 401:
            raise errors.Unauthenticated("the leader did not accept the connection's token")
        if status == 403:
            raise errors.AccessDenied("the connection's principal may not have a producer id")
        if status in RETRIABLE_STATUSES:
            raise ServedElsewhere(LOAD_IN_PROGRESS, f"the set's leader answered {status}")
        log.warning("Kafka InitProducerId: the leader answered %d: %r", status, bytes(answer.content)[:200])
        raise ServedElsewhere(int(kafka_errors.UnknownError.errno), f"the set's leader answered {status}")
