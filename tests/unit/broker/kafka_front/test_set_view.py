"""What a broker set's member answers on its Kafka port (set_view.SetView): the leader named everywhere, followers
sending clients on."""

from __future__ import annotations

import pytest
from kafka import errors as kafka_errors
from kafka.protocol.api_key import ApiKey

from halfmq.broker.kafka_front.set_view import NO_NODE, Broker, SetView

BROKERS = (Broker(1, "h1", 9092), Broker(2, "h2", 9093), Broker(3, "h3", 9094))


def _view(own: int, leader: int | None, leading: bool, brokers: tuple[Broker, ...] = BROKERS) -> SetView:
    return SetView(own=own, brokers=brokers, leader=leader, leading=leading, epoch=7)


@pytest.mark.parametrize("key", [ApiKey.ApiVersions, ApiKey.Metadata, ApiKey.FindCoordinator, ApiKey.SaslHandshake,
                                 ApiKey.SaslAuthenticate])
def test_every_member_serves_what_finds_the_leader(key: ApiKey) -> None:
    assert _view(2, 1, leading=False).refusal(int(key)) is None
    assert _view(2, None, leading=False).refusal(int(key)) is None


@pytest.mark.parametrize("key", [ApiKey.Produce, ApiKey.Fetch, ApiKey.ListOffsets, ApiKey.JoinGroup, ApiKey.OffsetCommit,
                                 ApiKey.InitProducerId, ApiKey.EndTxn, ApiKey.CreateTopics])
def test_the_leader_serves_everything(key: ApiKey) -> None:
    assert _view(1, 1, leading=True).refusal(int(key)) is None


@pytest.mark.parametrize("key", [ApiKey.Produce, ApiKey.Fetch, ApiKey.ListOffsets])
def test_a_follower_sends_partition_calls_to_the_leader_or_says_none_is_there_yet(key: ApiKey) -> None:
    assert _view(2, 1, leading=False).refusal(int(key)) == kafka_errors.NotLeaderForPartitionError.errno
    assert _view(2, None, leading=False).refusal(int(key)) == kafka_errors.LeaderNotAvailableError.errno


@pytest.mark.parametrize("key", [ApiKey.JoinGroup, ApiKey.SyncGroup, ApiKey.Heartbeat, ApiKey.LeaveGroup, ApiKey.OffsetCommit,
                                 ApiKey.OffsetFetch, ApiKey.InitProducerId, ApiKey.AddPartitionsToTxn, ApiKey.EndTxn,
                                 ApiKey.TxnOffsetCommit])
def test_a_follower_is_not_the_coordinator(key: ApiKey) -> None:
    assert _view(2, 1, leading=False).refusal(int(key)) == kafka_errors.NotCoordinatorError.errno
    assert _view(2, None, leading=False).refusal(int(key)) == kafka_errors.CoordinatorNotAvailableError.errno


def test_a_follower_answers_an_idempotent_producers_id_itself_by_asking_the_leader() -> None:
    follower = _view(2, 1, leading=False)
    assert follower.asks_leader
    assert follower.refusal(int(ApiKey.InitProducerId), transactional=False) is None
    assert follower.refusal(int(ApiKey.InitProducerId), transactional=True) == kafka_errors.NotCoordinatorError.errno
    leader = _view(1, 1, leading=True)
    assert leader.refusal(int(ApiKey.InitProducerId), transactional=False) is None
    assert not leader.asks_leader


@pytest.mark.parametrize("view", [_view(2, None, leading=False), _view(2, 2, leading=False),
                                  _view(2, 1, leading=False, brokers=BROKERS[1:])],
                         ids=["no-leader", "own-services-not-up", "leader-address-unknown"])
def test_with_no_other_leader_to_ask_an_idempotent_producers_id_is_asked_again_without_a_coordinator_lookup(view: SetView) -> None:
    assert not view.asks_leader
    assert view.refusal(int(ApiKey.InitProducerId), transactional=False) == kafka_errors.CoordinatorLoadInProgressError.errno


def test_a_new_leader_whose_services_are_not_up_yet_refuses_as_if_none_led() -> None:
    opening = _view(2, 2, leading=False)
    assert opening.refusal(int(ApiKey.Produce)) == kafka_errors.LeaderNotAvailableError.errno
    assert opening.refusal(int(ApiKey.JoinGroup)) == kafka_errors.CoordinatorNotAvailableError.errno


def test_admin_calls_on_a_follower_are_sent_to_the_controller() -> None:
    assert _view(2, 1, leading=False).refusal(int(ApiKey.CreateTopics)) == kafka_errors.NotControllerError.errno


def test_metadata_names_the_leader_on_every_member_and_none_while_unknown() -> None:
    for own in (1, 2, 3):
        view = _view(own, 3, leading=own == 3)
        assert (view.partition_leader, view.partition_error, view.coordinator) == (3, 0, BROKERS[2])
    unknown = _view(2, None, leading=False)
    assert (unknown.partition_leader, unknown.coordinator) == (NO_NODE, None)
    assert unknown.partition_error == kafka_errors.LeaderNotAvailableError.errno


def test_a_leader_whose_address_is_not_known_is_not_named() -> None:
    view = _view(2, 3, leading=False, brokers=BROKERS[:2])
    assert view.partition_leader == NO_NODE
    assert view.refusal(int(ApiKey.Produce)) == kafka_errors.LeaderNotAvailableError.errno


def test_a_single_broker_leads_alone() -> None:
    view = SetView.single(Broker(0, "127.0.0.1", 9092))
    assert (view.node_ids, view.partition_leader, view.refusal(int(ApiKey.Produce))) == ([0], 0, None)
