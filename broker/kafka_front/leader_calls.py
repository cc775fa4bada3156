"""A set's follower answering, as the leader would, what Kafka's clients send to whichever broker they like: it asks
the leader's HTTP front as the connection's principal (issue 47). The one call and the mapping of its answers, for an
idempotent producer's id (leader_producer_ids.py) and a topic Metadata auto-creates (leader_topics.py).

The call carries the connection's own bearer token (its SASL/PLAIN password, kept in memory for the connection's life,
sasl.connection_token), never the cluster's, so the leader checks the client's rights, not the node's; with auth off
no token is sent. The answers: the leader not known, unreachable, moved (421), busy or failing: a retriable Kafka
error the caller names, which the client asks again after its backoff. 401 and 403: Unauthenticated and AccessDenied,
the codes the leader's own front answers. Any other refusal: the halfmq error its problem ``code`` names, else
UNKNOWN_SERVER_ERROR.
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

RETRIABLE_STATUSES = frozenset({421, 429, 500, 502, 503, 504})
"""The leader moved (421), is busy or failing: asked again by the client after its backoff."""

PostAs = Callable[[str, Any, str | None], Awaitable[Any]]
"""(path, JSON body, bearer token or None) -> the leader's answer (peers.PeerResponse): cluster.node.ClusterNode's
``post_to_leader_as``; LookupError when no other member leads, peers.PeerError when the call got no answer."""


async def ask_leader(post_as: PostAs, path: str, body: Any, token: str | None, *, unavailable: int, forbidden: str) -> Any:
    """The leader's JSON answer to ``POST path`` (200 or 201). Raised otherwise: ServedElsewhere(``unavailable``) while
    the leader is not there, Unauthenticated (401), AccessDenied(``forbidden``) (403), or the leader's refusal."""
    try:
        answer = await post_as(path, body, token)
    except (LookupError, PeerError) as exc:  # no other leader known, unreachable, timed out: the client asks again
        log.info("Kafka front: the leader was not asked %s (%s)", path, exc)
        raise ServedElsewhere(unavailable, f"the set's leader is not reachable: {exc}") from exc
    status = int(answer.status_code)
    if status in (200, 201):
        return answer.json()
    if status in RETRIABLE_STATUSES:
        raise ServedElsewhere(unavailable, f"the set's leader answered {status}")
    if status == 401:
        raise errors.Unauthenticated("the leader did not accept the connection's token")
    if status == 403:
        raise errors.AccessDenied(forbidden)
    problem = _problem(answer)
    log.info("Kafka front: the leader refused %s: %d %r", path, status, problem or bytes(answer.content)[:200])
    if "code" not in problem:
        raise ServedElsewhere(int(kafka_errors.UnknownError.errno), f"the set's leader answered {status}")
    raise errors.error_class_for(str(problem["code"]))(str(problem.get("detail", f"the set's leader answered {status}")))


def _problem(answer: Any) -> dict[str, Any]:
    """The leader's problem+json body, or nothing when it is not one."""
    try:
        body = answer.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}
