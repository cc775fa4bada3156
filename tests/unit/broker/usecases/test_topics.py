"""ManageTopics built from fakes: a new topic is answered once durable; an existing one is no write; refusals change nothing."""

from __future__ import annotations

from typing import Any

import pytest

from halfmq.broker.security.access import ANONYMOUS, Access
from halfmq.broker.security.policy import Action, Resource
from halfmq.broker.usecases.topics import ManageTopics
from halfmq.errors import AccessDenied, InvalidQueueId, TopicAlreadyExists, TopicNotFound
from halfmq.wire import TopicCreate
from tests.unit.broker.usecases.fakes import SCOPE, DenyingAccess, FakeLog, FakeTopics, FakeViews, RecordingDurable


def manage_topics(access: Access | None = None) -> tuple[ManageTopics, FakeTopics, RecordingDurable, FakeLog]:
    topics, durable, log = FakeTopics(), RecordingDurable(), FakeLog(end=4242)
    use_case = ManageTopics(access or Access(None), topics, Any, FakeViews(), durable, log)  # type: ignore[arg-type]
    return use_case, topics, durable, log


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
