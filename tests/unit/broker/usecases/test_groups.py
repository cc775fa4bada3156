"""ManageGroups built from fakes: a DLQ resend writes one message back where it came from and waits for it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from halfmq.broker.delivery.dlq_redrive import Redrives
from halfmq.broker.security.access import ANONYMOUS, Access
from halfmq.broker.security.policy import Action, Resource
from halfmq.broker.store.topics import TopicConfig, dlq_topic
from halfmq.broker.usecases.groups import ManageGroups
from halfmq.errors import AccessDenied, DlqMessageNotFound
from tests.unit.broker.usecases.fakes import SCOPE, DenyingAccess, FakeLog, FakeViews, RecordingDurable


@dataclass
class DeadLetter:
    queue_offset: int
    body: bytes
    properties: dict[str, str]
    born_timestamp: int = 1
    binary: bool = False


@dataclass
class FakeDlqStore:
    """``StoreReads`` as the DLQ reads it: one group's DLQ queue and the topics."""

    topics_: dict[str, TopicConfig] = field(default_factory=dict)
    dlq: list[DeadLetter] = field(default_factory=list)

    @property
    def visible(self) -> FakeDlqStore:
        return self

    def topic(self, name: str) -> TopicConfig | None:
        return self.topics_.get(name)

    def read_entries(self, topic: str, queue_id: int, offset: int, max_messages: int) -> list[Any]:
        return [m for m in self.dlq if m.queue_offset >= offset][:max_messages]


def manage_groups(access: Access | None = None) -> tuple[ManageGroups, FakeLog, RecordingDurable]:
    store = FakeDlqStore({"ORDERS": TopicConfig("ORDERS", 4, 0), dlq_topic("G"): TopicConfig(dlq_topic("G"), 1, 0)},
                         [DeadLetter(0, b"x", {"UNIQ_KEY": "m-0", "REAL_TOPIC": "ORDERS", "REAL_QID": "2"})])
    log, durable = FakeLog(end=3000), RecordingDurable()
    use_case = ManageGroups(access or Access(None), Any, store, log.put, FakeViews(), durable,  # type: ignore[arg-type]
                            Any, lambda: 0, Redrives(1, 1, 1))  # type: ignore[arg-type]  # resets and redrives unused here
    return use_case, log, durable


async def test_a_dlq_resend_writes_one_message_to_its_own_topic_and_queue_and_waits_for_durability() -> None:
    use_case, log, durable = manage_groups()
    answer = await use_case.resend_dlq(ANONYMOUS, SCOPE, "G", 0)
    [[item]] = log.groups
    assert (item.topic, item.queue_id, item.body) == ("ORDERS", 2, b"x")
    assert item.properties["DLQ_RESENT_FROM"] == f"{dlq_topic('G')}@0"
    assert durable.waited == [log.end]
    assert (answer.msg_id, answer.topic, answer.queue_id) == ("m-0", "ORDERS", 2)


async def test_a_dlq_resend_of_an_offset_the_dlq_does_not_have_is_not_found_and_writes_nothing() -> None:
    use_case, log, durable = manage_groups()
    for offset in (1, -5):
        with pytest.raises(DlqMessageNotFound):
            await use_case.resend_dlq(ANONYMOUS, SCOPE, "G", offset)
    assert log.groups == [] and durable.waited == []


async def test_a_dlq_resend_without_admin_on_the_group_is_refused_and_writes_nothing() -> None:
    use_case, log, durable = manage_groups(DenyingAccess((Action.ADMIN, Resource.group("G"))))
    with pytest.raises(AccessDenied):
        await use_case.resend_dlq(ANONYMOUS, SCOPE, "G", 0)
    assert log.groups == [] and durable.waited == []
