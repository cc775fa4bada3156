"""What a broker set's member answers on its Kafka port (set_view.SetView) and how it learns the others' addresses
(set_picture.SetPicture): node ids the same on every member, the leader named everywhere, followers sending on."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from kafka import errors as kafka_errors
from kafka.protocol.api_key import ApiKey

from halfmq.broker.kafka_front.set_picture import SetPicture, kafka_address, kafka_node_ids
from halfmq.broker.kafka_front.set_view import NO_NODE, Broker, SetView

BROKERS = (Broker(1, "h1", 9092), Broker(2, "h2", 9093), Broker(3, "h3", 9094))


def _view(own: int, leader: int | None, leading: bool, brokers: tuple[Broker, ...] = BROKERS) -> SetView:
    return SetView(own=own, brokers=brokers, leader=leader, leading=leading, epoch=7)


def test_node_ids_are_the_members_sorted_places_whatever_order_they_are_listed_in() -> None:
    assert kafka_node_ids(["n3", "n1", "n2"]) == kafka_node_ids(["n1", "n2", "n3"]) == {"n1": 1, "n2": 2, "n3": 3}


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


def _registration(node_id: str, kafka: str | None) -> SimpleNamespace:
    return SimpleNamespace(value=json.dumps({"node_id": node_id, "url": "http://x", **({"kafka": kafka} if kafka else {})}).encode())


def test_the_picture_names_each_member_at_its_registered_address_under_the_same_ids_on_every_node() -> None:
    registrations = [_registration("n1", "h1:9092"), _registration("n2", "h2:9093"), _registration("n3", kafka_address("::1", 9094)),
                     _registration("stranger", "h9:1")]
    views = []
    for own, address in (("n1", ("h1", 9092)), ("n2", ("h2", 9093))):
        picture = SetPicture(own, ["n3", "n2", "n1"], address, leader=lambda: ("n3", 4), registrations=lambda: None)  # type: ignore[arg-type,return-value]
        picture.learn([r.value for r in registrations])
        views.append(picture.view())
    assert views[0].brokers == views[1].brokers == (Broker(1, "h1", 9092), Broker(2, "h2", 9093), Broker(3, "::1", 9094))
    assert [(v.own, v.leader, v.epoch, v.leading) for v in views] == [(1, 3, 4, False), (2, 3, 4, False)]


def test_a_member_not_registered_yet_is_left_out_and_the_node_itself_always_in() -> None:
    picture = SetPicture("n2", ["n1", "n2", "n3"], ("h2", 9093), leader=lambda: (None, 0), registrations=lambda: None)  # type: ignore[arg-type,return-value]
    picture.learn([_registration("n1", None).value, b"not json"])
    assert picture.view().brokers == (Broker(2, "h2", 9093),)
