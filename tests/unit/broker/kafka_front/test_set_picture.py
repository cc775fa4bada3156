"""How a broker set's member pictures the set for Kafka's clients (set_picture.KafkaSetPicture): node ids the same on
every member, each at the address its registration names, the live members named and a dead one left out."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

from halfmq.broker.kafka_front.set_picture import (
    FIRST_READ,
    LATEST_READ,
    KafkaSetPicture,
    kafka_address,
    kafka_node_ids,
    next_read,
)
from halfmq.broker.kafka_front.set_view import Broker

MEMBERS = ["n3", "n2", "n1"]


@dataclass
class FakeMember:
    """A set's node as its Kafka front sees it: who leads, who is in sync, what etcd's ``nodes/`` holds."""

    leader: str | None = "n3"
    term: int = 4
    in_sync: frozenset[str] | None = None
    values: list[bytes] = field(default_factory=list)
    reads: int = 0

    def leader_and_term(self) -> tuple[str | None, int]:
        return self.leader, self.term

    def in_sync_members(self) -> frozenset[str] | None:
        return self.in_sync

    async def registrations(self) -> list[Any]:
        self.reads += 1
        return [SimpleNamespace(value=v) for v in self.values]

    async def post_to_leader_as(self, path: str, json: Any, token: str | None) -> Any:
        raise AssertionError("not asked here")


def _registration(node_id: str, kafka: str | None) -> bytes:
    return json.dumps({"node_id": node_id, "url": "http://x", **({"kafka": kafka} if kafka else {})}).encode()


EVERY_REGISTRATION = [_registration("n1", "h1:9092"), _registration("n2", "h2:9093"),
                      _registration("n3", kafka_address("::1", 9094)), _registration("stranger", "h9:1")]


def test_node_ids_are_the_members_sorted_places_whatever_order_they_are_listed_in() -> None:
    assert kafka_node_ids(["n3", "n1", "n2"]) == kafka_node_ids(["n1", "n2", "n3"]) == {"n1": 1, "n2": 2, "n3": 3}


def test_the_picture_names_each_member_at_its_registered_address_under_the_same_ids_on_every_node() -> None:
    views = []
    for own, address in (("n1", ("h1", 9092)), ("n2", ("h2", 9093))):
        picture = KafkaSetPicture(own, MEMBERS, address, FakeMember())
        picture.learn(EVERY_REGISTRATION)
        views.append(picture.view())
    assert views[0].brokers == views[1].brokers == (Broker(1, "h1", 9092), Broker(2, "h2", 9093), Broker(3, "::1", 9094))
    assert [(v.own, v.leader, v.epoch, v.leading) for v in views] == [(1, 3, 4, False), (2, 3, 4, False)]


def test_a_member_not_registered_yet_is_left_out_and_the_node_itself_always_in() -> None:
    picture = KafkaSetPicture("n2", MEMBERS, ("h2", 9093), FakeMember(leader=None))
    picture.learn([_registration("n1", None), b"not json"])
    assert picture.view().brokers == (Broker(2, "h2", 9093),)
    assert picture.missing


def test_a_member_out_of_the_in_sync_set_is_no_broker_but_an_offline_replica() -> None:
    """A killed member leaves the in-sync set: Metadata stops sending clients to it, as Kafka's stops naming a dead broker."""
    member = FakeMember(leader="n2", in_sync=frozenset({"n2", "n3"}))
    picture = KafkaSetPicture("n3", MEMBERS, ("::1", 9094), member)
    picture.learn(EVERY_REGISTRATION)
    view = picture.view()
    assert [b.node_id for b in view.brokers] == [2, 3]
    assert (view.replica_ids, view.isr_ids, view.offline_ids, view.partition_leader) == ([1, 2, 3], [2, 3], [1], 2)


def test_the_leader_and_the_node_itself_are_named_even_when_the_in_sync_set_it_knows_leaves_them_out() -> None:
    picture = KafkaSetPicture("n1", MEMBERS, ("h1", 9092), FakeMember(leader="n2", in_sync=frozenset({"n3"})))
    picture.learn(EVERY_REGISTRATION)
    assert [b.node_id for b in picture.view().brokers] == [1, 2, 3]


def test_while_the_in_sync_set_is_not_known_every_member_with_an_address_is_named_and_in_sync() -> None:
    picture = KafkaSetPicture("n1", MEMBERS, ("h1", 9092), FakeMember(in_sync=None))
    picture.learn(EVERY_REGISTRATION[:2])
    view = picture.view()
    assert (view.node_ids, view.isr_ids, view.offline_ids) == ([1, 2], [1, 2], [3])


def test_registrations_are_read_soon_then_less_often_while_one_is_missing_and_every_latest_seconds_once_all_are_known() -> None:
    waits, waited = [], None
    for _ in range(9):
        waited = next_read(True, waited)
        waits.append(waited)
    assert waits == [FIRST_READ, 1.0, 2.0, 4.0, 8.0, 16.0, LATEST_READ, LATEST_READ, LATEST_READ]
    assert next_read(False, FIRST_READ) == next_read(False, None) == LATEST_READ


async def test_a_member_that_comes_back_advertising_another_address_is_learned_again(monkeypatch: pytest.MonkeyPatch) -> None:
    member = FakeMember(values=list(EVERY_REGISTRATION))
    picture = KafkaSetPicture("n1", MEMBERS, ("h1", 9092), member)
    slept: list[float] = []
    moved = asyncio.Event()

    async def sleep(seconds: float) -> None:
        slept.append(seconds)
        member.values = [_registration("n2", "elsewhere:19093")]
        if len(slept) == 2:
            moved.set()
            await asyncio.Event().wait()  # parked until stopped

    monkeypatch.setattr("halfmq.broker.kafka_front.set_picture.asyncio.sleep", sleep)
    picture.start()
    await asyncio.wait_for(moved.wait(), 5)
    await picture.stop()
    assert slept == [LATEST_READ, LATEST_READ]  # every address known after the first read
    assert Broker(2, "elsewhere", 19093) in picture.view().brokers
