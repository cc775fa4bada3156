"""A set's follower answers an idempotent producer's InitProducerId with an id the leader hands out, asked as the
connection's principal (leader_producer_ids.py); the leader's refusals become the codes the clients act on."""

from __future__ import annotations

import pytest
from kafka import errors as kafka_errors

from halfmq.broker.cluster.peers import PeerResponse, PeerUnreachable
from halfmq.broker.kafka_front.error_codes import error_of
from halfmq.broker.kafka_front.leader_producer_ids import LeaderProducerIds
from tests.support.fake_leader import FakeLeader


async def test_the_leaders_producer_id_is_asked_with_the_connections_own_token() -> None:
    leader = FakeLeader(PeerResponse.of(201, json={"producer_id": 4711, "epoch": 0}))
    assert await LeaderProducerIds(leader.post_as).new_producer_id("alice-token") == (4711, 0)
    assert leader.calls == [("/v1/producer-ids", {}, "alice-token")]


async def test_with_auth_off_no_token_is_sent() -> None:
    leader = FakeLeader(PeerResponse.of(201, json={"producer_id": 9, "epoch": 0}))
    await LeaderProducerIds(leader.post_as).new_producer_id(None)
    assert leader.calls[0][2] is None


@pytest.mark.parametrize("failure", [LookupError("no other member leads"), PeerUnreachable("refused", refused=True),
                                     PeerResponse.of(421), PeerResponse.of(503)],
                         ids=["no-leader", "unreachable", "moved", "unavailable"])
async def test_a_leader_not_there_is_answered_with_the_code_both_clients_retry_without_a_coordinator_lookup(
        failure: PeerResponse | Exception) -> None:
    with pytest.raises(Exception) as refused:
        await LeaderProducerIds(FakeLeader(failure).post_as).new_producer_id("t")
    assert error_of(refused.value) == kafka_errors.CoordinatorLoadInProgressError.errno


@pytest.mark.parametrize(("status", "code"), [(401, kafka_errors.SaslAuthenticationFailedError.errno),
                                              (403, kafka_errors.TopicAuthorizationFailedError.errno)])
async def test_the_leaders_auth_refusals_are_answered_as_the_leaders_own_front_answers_them(status: int, code: int) -> None:
    with pytest.raises(Exception) as refused:
        await LeaderProducerIds(FakeLeader(PeerResponse.of(status, json={"code": "X"})).post_as).new_producer_id("t")
    assert error_of(refused.value) == code
