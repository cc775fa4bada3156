"""Heartbeats built from fakes: a registration is answered once durable; a refused heartbeat registers nothing."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from halfmq.broker.security.access import ANONYMOUS, Access
from halfmq.broker.security.policy import Action, Resource
from halfmq.broker.usecases.producers import Heartbeats
from halfmq.errors import AccessDenied, InvalidGroupName
from halfmq.wire import Heartbeat
from tests.unit.broker.usecases.fakes import SCOPE, DenyingAccess, FakeViews, RecordingDurable


@dataclass
class Known:
    address: str | None


@dataclass
class FakeRegistry:
    """``Registry``: a heartbeat answers the offset of its registration record for a new producer, None for a refresh."""

    beats: list[tuple[str, str, str | None, str | None]] = field(default_factory=list)
    known: dict[tuple[str, str], Known] = field(default_factory=dict)

    def heartbeat(self, group: str, client_id: str, check_url: str | None, address: str | None = None) -> int | None:
        self.beats.append((group, client_id, check_url, address))
        if (group, client_id) in self.known:
            return None
        self.known[(group, client_id)] = Known(address)
        return 640

    def registered(self, group: str, client_id: str, check_url: str) -> Any:
        return self.known.get((group, client_id))

    def live(self, group: str) -> list[Any]:
        return []

    def group_names(self) -> list[str]:
        return [g for g, _ in self.known]


def heartbeats(access: Access | None = None) -> tuple[Heartbeats, FakeRegistry, RecordingDurable]:
    registry, durable = FakeRegistry(), RecordingDurable()
    use_case = Heartbeats(access or Access(None), registry, FakeViews(), durable, Any, [], 30.0)  # type: ignore[arg-type]
    return use_case, registry, durable


async def test_a_new_producer_is_answered_once_its_registration_is_durable_and_a_refresh_waits_for_nothing() -> None:
    use_case, registry, durable = heartbeats()
    answer = await use_case.heartbeat(ANONYMOUS, SCOPE, Heartbeat(producer_group="PG", client_id="c1"))
    assert (answer.producer_group, answer.client_id, answer.expires_in) == ("PG", "c1", 30.0)
    assert durable.waited == [640]
    await use_case.heartbeat(ANONYMOUS, SCOPE, Heartbeat(producer_group="PG", client_id="c1"))
    assert durable.waited == [640] and len(registry.beats) == 2


async def test_a_known_check_url_keeps_the_address_resolved_at_registration() -> None:
    use_case, registry, _ = heartbeats()
    registry.known[("PG", "c1")] = Known("10.0.0.7")
    await use_case.heartbeat(ANONYMOUS, SCOPE, Heartbeat(producer_group="PG", client_id="c1", check_url="http://producer.example/check"))
    assert registry.beats == [("PG", "c1", "http://producer.example/check", "10.0.0.7")]  # not resolved again


async def test_a_heartbeat_for_a_group_the_principal_may_not_publish_for_is_refused_and_registers_nothing() -> None:
    use_case, registry, durable = heartbeats(DenyingAccess((Action.PUBLISH, Resource.group("PG"))))
    with pytest.raises(AccessDenied):
        await use_case.heartbeat(ANONYMOUS, SCOPE, Heartbeat(producer_group="PG", client_id="c1"))
    assert registry.beats == [] and durable.waited == []


async def test_a_heartbeat_for_an_invalid_group_name_is_refused_and_registers_nothing() -> None:
    use_case, registry, durable = heartbeats()
    with pytest.raises(InvalidGroupName):
        await use_case.heartbeat(ANONYMOUS, SCOPE, Heartbeat(producer_group="bad name!", client_id="c1"))
    assert registry.beats == [] and durable.waited == []


def test_check_backs_go_only_to_groups_the_principal_may_publish_for() -> None:
    use_case, _, _ = heartbeats(DenyingAccess((Action.PUBLISH, Resource.group("B"))))
    assert use_case.check_back_groups(ANONYMOUS, ["A", "B", "C"]) == ["A", "C"]
