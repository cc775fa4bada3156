"""ManageTopics built from fakes: a new topic is answered once durable; an existing one is no write; a deletion is
answered once its record is durable; refusals change nothing."""

from __future__ import annotations

import pytest

from halfmq.broker.security.access import ANONYMOUS, Access
from halfmq.broker.security.policy import Action, Resource
from halfmq.broker.usecases.topics import ManageTopics
from halfmq.errors import AccessDenied, InvalidQueueId, SystemTopicForbidden, TopicAlreadyExists, TopicInUse, TopicNotFound
from halfmq.wire import TopicAlter, TopicCreate
from tests.unit.broker.usecases.fakes import SCOPE, DenyingAccess, FakeLog, FakeTopics, FakeViews, RecordingDurable


class FakeRemoval:
    """``TopicRemoval``: the topics deleted, each answered with the log end of its record."""

    def __init__(self, topics: FakeTopics) -> None:
        self.topics = topics
        self.deleted: list[str] = []

    def delete_topic(self, name: str, ends: dict[int, int] | None = None, at: int = 0) -> int:
        self.deleted.append(name)
        self.topics.table.pop(name)
        return 5151


class FakeHolders:
    """``TopicHolders`` and ``PendingHalves``: what holds each topic, and the topics forgotten."""

    def __init__(self) -> None:
        self.in_flight_by_topic: dict[str, int] = {}
        self.pending_by_topic: dict[str, int] = {}
        self.forgotten: list[str] = []

    def in_flight(self, group: str | None = None, *, topic: str | None = None) -> int:
        return self.in_flight_by_topic.get(topic or "", 0)

    def forget(self, *, group: str | None = None, topic: str | None = None) -> None:
        self.forgotten.append(topic or "")

    def pending_on(self, topic: str) -> int:
        return self.pending_by_topic.get(topic, 0)


class FakeQueueEnds:
    """``StoreReads`` as a deletion reads it: every queue ends at 7."""

    class visible:  # noqa: N801 - the store's attribute
        @staticmethod
        def queue_range(topic: str, queue_id: int) -> tuple[int, int]:
            return 0, 7


def manage_topics(access: Access | None = None) -> tuple[ManageTopics, FakeTopics, RecordingDurable, FakeLog]:
    use_case, topics, durable, log, _, _ = manage_topics_with_holders(access)
    return use_case, topics, durable, log


def manage_topics_with_holders(access: Access | None = None
                               ) -> tuple[ManageTopics, FakeTopics, RecordingDurable, FakeLog, FakeRemoval, FakeHolders]:
    topics, durable, log, holders = FakeTopics(), RecordingDurable(), FakeLog(end=4242), FakeHolders()
    removal = FakeRemoval(topics)
    use_case = ManageTopics(access or Access(None), topics, FakeQueueEnds, FakeViews(), durable, log,  # type: ignore[arg-type]
                            removal, holders, holders, holders)
    return use_case, topics, durable, log, removal, holders


async def test_a_new_topic_is_answered_once_its_record_is_durable() -> None:
    use_case, topics, durable, _ = manage_topics()
    cfg, created = await use_case.create(ANONYMOUS, SCOPE, TopicCreate(name="ORDERS", queues=8))
    assert created and cfg.queues == 8
    assert topics.created == ["ORDERS"]
    assert durable.waited == [4242]  # the log's end, where the topic record is


async def test_a_topic_that_exists_with_the_same_queue_count_is_answered_without_a_wait() -> None:
    use_case, topics, durable, _ = manage_topics()
    topics.add("ORDERS", 8)
    cfg, created = await use_case.create(ANONYMOUS, SCOPE, TopicCreate(name="ORDERS", queues=8))
    assert not created and cfg.queues == 8
    assert durable.waited == []


async def test_a_topic_that_exists_with_another_queue_count_is_refused_and_nothing_changes() -> None:
    use_case, topics, durable, _ = manage_topics()
    topics.add("ORDERS", 8)
    with pytest.raises(TopicAlreadyExists):
        await use_case.create(ANONYMOUS, SCOPE, TopicCreate(name="ORDERS", queues=2))
    assert topics.table["ORDERS"].queues == 8 and topics.created == []
    assert durable.waited == []


async def test_a_creation_without_admin_on_the_topic_is_refused_before_the_table_is_asked() -> None:
    use_case, topics, durable, _ = manage_topics(DenyingAccess((Action.ADMIN, Resource.topic("ORDERS"))))
    with pytest.raises(AccessDenied):
        await use_case.create(ANONYMOUS, SCOPE, TopicCreate(name="ORDERS", queues=8))
    assert topics.table == {} and durable.waited == []


def test_describing_a_topic_answers_its_view_and_an_unknown_topic_is_not_found() -> None:
    use_case, topics, _, _ = manage_topics()
    topics.add("ORDERS", 3)
    assert use_case.describe(ANONYMOUS, SCOPE, "ORDERS").queues == 3
    with pytest.raises(TopicNotFound):
        use_case.describe(ANONYMOUS, SCOPE, "NOPE")


def test_describing_a_topic_without_describe_on_it_is_refused() -> None:
    use_case, topics, _, _ = manage_topics(DenyingAccess((Action.DESCRIBE, Resource.topic("ORDERS"))))
    topics.add("ORDERS", 3)
    with pytest.raises(AccessDenied):
        use_case.describe(ANONYMOUS, SCOPE, "ORDERS")


def test_reading_a_queue_the_topic_does_not_have_is_refused_before_the_log_is_read() -> None:
    use_case, topics, _, _ = manage_topics()  # the store is a bare object: any read of it would fail
    topics.add("ORDERS", 2)
    with pytest.raises(InvalidQueueId):
        use_case.read_messages(ANONYMOUS, SCOPE, "ORDERS", 2, 0, 10)
    with pytest.raises(InvalidQueueId):
        use_case.read_messages(ANONYMOUS, SCOPE, "ORDERS", -1, 0, 10)


def test_a_route_is_the_topic_as_auto_create_would_make_it_and_creates_nothing() -> None:
    use_case, topics, _, _ = manage_topics()
    assert use_case.route(ANONYMOUS, SCOPE, "NEW").name == "NEW"
    assert topics.created == [] and topics.table == {}


async def test_a_deletion_is_answered_once_its_record_is_durable_and_forgets_the_topics_groups() -> None:
    use_case, topics, durable, _, removal, holders = manage_topics_with_holders()
    topics.add("ORDERS", 2)
    deleted = await use_case.delete(ANONYMOUS, SCOPE, "ORDERS", force=False)
    assert (deleted.topic, deleted.queue_ends, deleted.pending_halves, deleted.in_flight) == ("ORDERS", [7, 7], 0, 0)
    assert removal.deleted == ["ORDERS"] and holders.forgotten == ["ORDERS"]
    assert durable.waited == [5151]


@pytest.mark.parametrize("held", ["pending_by_topic", "in_flight_by_topic"])
async def test_a_topic_in_use_is_deleted_only_when_forced(held: str) -> None:
    use_case, topics, durable, _, removal, holders = manage_topics_with_holders()
    topics.add("ORDERS", 2)
    getattr(holders, held)["ORDERS"] = 3
    with pytest.raises(TopicInUse):
        await use_case.delete(ANONYMOUS, SCOPE, "ORDERS", force=False)
    assert removal.deleted == [] and holders.forgotten == [] and durable.waited == []
    await use_case.delete(ANONYMOUS, SCOPE, "ORDERS", force=True)
    assert removal.deleted == ["ORDERS"]


async def test_a_deletion_without_admin_on_the_topic_or_of_a_system_topic_changes_nothing() -> None:
    use_case, topics, durable, _, removal, _ = manage_topics_with_holders(DenyingAccess((Action.ADMIN, Resource.topic("ORDERS"))))
    topics.add("ORDERS", 2)
    with pytest.raises(AccessDenied):
        await use_case.delete(ANONYMOUS, SCOPE, "ORDERS", force=True)
    with pytest.raises(SystemTopicForbidden):
        await use_case.delete(ANONYMOUS, SCOPE, "HALFMQ_TXN_STATE", force=True)
    with pytest.raises(TopicNotFound):
        await use_case.delete(ANONYMOUS, SCOPE, "NOPE", force=True)
    assert removal.deleted == [] and durable.waited == [] and "ORDERS" in topics.table


async def test_a_new_topic_keeps_the_retention_it_was_created_with() -> None:
    use_case, topics, _, _ = manage_topics()
    await use_case.create(ANONYMOUS, SCOPE, TopicCreate(name="ORDERS", queues=1, retention_ms=60_000, retention_bytes=10))
    assert (topics.table["ORDERS"].retention_ms, topics.table["ORDERS"].retention_bytes) == (60_000, 10)


async def test_altering_a_topic_changes_only_the_limits_named_and_null_puts_one_back_to_the_brokers() -> None:
    use_case, topics, durable, _ = manage_topics()
    await use_case.create(ANONYMOUS, SCOPE, TopicCreate(name="ORDERS", queues=1, retention_ms=60_000, retention_bytes=10))
    durable.waited.clear()
    shown = await use_case.alter(ANONYMOUS, SCOPE, "ORDERS", TopicAlter(retention_bytes=None))
    assert (shown.retention_ms, shown.retention_bytes) == (60_000, None)
    assert durable.waited == [4343]  # answered once its record is durable
    shown = await use_case.alter(ANONYMOUS, SCOPE, "ORDERS", TopicAlter(retention_ms=5_000))
    assert (shown.retention_ms, shown.retention_bytes) == (5_000, None)
    durable.waited.clear()
    await use_case.alter(ANONYMOUS, SCOPE, "ORDERS", TopicAlter())  # nothing named: nothing written, no wait
    assert durable.waited == []


async def test_altering_a_topic_without_admin_on_it_is_refused_and_nothing_changes() -> None:
    use_case, topics, durable, _ = manage_topics(DenyingAccess((Action.ADMIN, Resource.topic("ORDERS"))))
    topics.add("ORDERS", 1)
    with pytest.raises(AccessDenied):
        await use_case.alter(ANONYMOUS, SCOPE, "ORDERS", TopicAlter(retention_ms=5_000))
    assert topics.table["ORDERS"].retention_ms is None and durable.waited == []
