"""A set's follower creates a topic a Metadata request names on the leader, as the connection's principal
(leader_topics.py): the leader's answers become the codes the leader's own front would give, and a leader that is not
there is LEADER_NOT_AVAILABLE, which every client retries."""

from __future__ import annotations

from typing import Any

import pytest
from kafka import errors as kafka_errors

from halfmq.broker.cluster.peers import PeerResponse, PeerUnreachable
from halfmq.broker.kafka_front.error_codes import error_of
from halfmq.broker.kafka_front.leader_topics import LeaderTopics
from tests.support.fake_leader import FakeLeader


def topic_info(queues: int) -> dict[str, Any]:
    return {"name": "ORDERS", "queues": [{"queue_id": q, "min_offset": 0, "max_offset": 0} for q in range(queues)]}


@pytest.mark.parametrize("status", [200, 201], ids=["found", "created"])
async def test_the_topic_is_created_on_the_leader_with_the_connections_token_and_its_queue_count_answered(status: int) -> None:
    leader = FakeLeader(PeerResponse.of(status, json=topic_info(3)))
    assert await LeaderTopics(leader.post_as).create("ORDERS", "alice-token") == 3
    assert leader.calls == [("/v1/topics", {"name": "ORDERS"}, "alice-token")]  # the broker's default queue count


@pytest.mark.parametrize("failure", [LookupError("no other member leads"), PeerUnreachable("refused", refused=True),
                                     PeerResponse.of(421), PeerResponse.of(503)],
                         ids=["no-leader", "unreachable", "moved", "unavailable"])
async def test_a_leader_not_there_is_leader_not_available_for_the_topic(failure: PeerResponse | Exception) -> None:
    with pytest.raises(Exception) as refused:
        await LeaderTopics(FakeLeader(failure).post_as).create("ORDERS", None)
    assert error_of(refused.value) == kafka_errors.LeaderNotAvailableError.errno


@pytest.mark.parametrize(("status", "problem", "code"), [
    (401, {"code": "UNAUTHENTICATED"}, kafka_errors.SaslAuthenticationFailedError.errno),
    (403, {"code": "ACCESS_DENIED"}, kafka_errors.TopicAuthorizationFailedError.errno),
    (400, {"code": "INVALID_TOPIC_NAME", "detail": "bad"}, kafka_errors.InvalidTopicError.errno),
], ids=["401", "403", "invalid-name"])
async def test_the_leaders_refusals_are_answered_as_the_leaders_own_front_answers_them(status: int, problem: dict[str, Any],
                                                                                       code: int) -> None:
    with pytest.raises(Exception) as refused:
        await LeaderTopics(FakeLeader(PeerResponse.of(status, json=problem)).post_as).create("ORDERS", "t")
    assert error_of(refused.value) == code


async def test_an_answer_that_is_not_a_problem_is_an_unknown_server_error_not_a_crash() -> None:
    with pytest.raises(Exception) as refused:
        await LeaderTopics(FakeLeader(PeerResponse.of(400, content=b"<html>")).post_as).create("ORDERS", "t")
    assert error_of(refused.value) == kafka_errors.UnknownError.errno
