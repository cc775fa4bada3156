"""ProducerTransactions built from fakes: every message is checked before the coordinator keeps any; refusals keep nothing."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from halfmq.broker.producer_transactions.results import AddedMessage, MessagesResult
from halfmq.broker.security.access import ANONYMOUS, Access, transactional_id
from halfmq.broker.security.policy import Action, Resource
from halfmq.broker.store.store_types import PutItem
from halfmq.broker.store.topics import TopicConfig
from halfmq.broker.usecases.producer_txns import ProducerTransactions
from halfmq.errors import AccessDenied, ProducerIdNotOwned, TooManyConsumerGroups
from halfmq.wire import TxnMessage, TxnMessagesRequest
from tests.unit.broker.usecases.fakes import SCOPE, DenyingAccess, FakeLog, FakeSender, FakeTopics


@dataclass
class FakeCoordinator:
    """The steps the use case asked the coordinator for; ``owner`` is the principal a transactional id's producer id is bound to."""

    owner: str = "anonymous"
    added: list[tuple[str, list[PutItem], list[str]]] = field(default_factory=list)
    aborted: list[tuple[str, Any]] = field(default_factory=list)

    def check_acting(self, tid: str, principal: str) -> None:
        if principal != self.owner:
            raise ProducerIdNotOwned(f"the producer id of {tid!r} is another principal's")

    def add_messages(self, tid: str, producer_id: int, epoch: int, sequence: int, items: list[PutItem],
                     missing: list[TopicConfig], *, principal: str | None = None) -> MessagesResult:
        self.added.append((tid, items, [cfg.name for cfg in missing]))
        return MessagesResult(tid, sequence, len(items), tuple(AddedMessage(i.properties["UNIQ_KEY"], i.topic, i.queue_id) for i in items))

    async def abort(self, tid: str, producer_id: int | None, epoch: int | None, by: Any = None) -> Any:
        self.aborted.append((tid, by))
        raise LookupError("not reached in these tests")


def producer_txns(access: Access | None = None, owner: str = "anonymous") -> tuple[ProducerTransactions, FakeCoordinator, FakeTopics]:
    coordinator, topics = FakeCoordinator(owner), FakeTopics()
    topics.add("ORDERS")
    use_case = ProducerTransactions(access or Access(None), coordinator, Any, topics, FakeSender(FakeLog()), Any, Any)  # type: ignore[arg-type]
    return use_case, coordinator, topics


def messages(*topics: str) -> TxnMessagesRequest:
    return TxnMessagesRequest(producer_id=1, epoch=0, sequence=0,
                              messages=[TxnMessage(topic=t, body=f"m{i}") for i, t in enumerate(topics)])


def test_messages_are_kept_with_the_topics_the_commit_must_create() -> None:
    use_case, coordinator, topics = producer_txns()
    actor = use_case.stepping(ANONYMOUS, SCOPE, "tid")
    answer = use_case.add_messages(actor, messages("ORDERS", "NEW", "ORDERS"))
    [(tid, items, missing)] = coordinator.added
    assert tid == "tid" and sorted(i.topic for i in items) == ["NEW", "ORDERS", "ORDERS"] and missing == ["NEW"]
    assert topics.created == []  # created by the commit, not now
    assert answer.messages == 3


def test_messages_to_a_topic_the_principal_may_not_publish_to_are_refused_and_none_is_kept() -> None:
    use_case, coordinator, _ = producer_txns(DenyingAccess((Action.PUBLISH, Resource.topic("SECRET"))))
    actor = use_case.stepping(ANONYMOUS, SCOPE, "tid")
    with pytest.raises(AccessDenied):
        use_case.add_messages(actor, messages("ORDERS", "SECRET"))
    assert coordinator.added == []


def test_a_step_by_a_principal_that_does_not_own_the_producer_id_is_refused() -> None:
    use_case, _, _ = producer_txns(owner="alice")
    with pytest.raises(ProducerIdNotOwned):
        use_case.stepping(ANONYMOUS, SCOPE, "tid")


def test_a_step_without_publish_on_the_transactional_id_is_refused_before_the_coordinator_is_asked() -> None:
    use_case, _, _ = producer_txns(DenyingAccess((Action.PUBLISH, transactional_id("tid"))), owner="alice")
    with pytest.raises(AccessDenied):  # not ProducerIdNotOwned: the coordinator was not asked
        use_case.stepping(ANONYMOUS, SCOPE, "tid")


async def test_a_force_abort_without_admin_on_the_transactional_id_is_refused_and_aborts_nothing() -> None:
    use_case, coordinator, _ = producer_txns(DenyingAccess((Action.ADMIN, transactional_id("tid"))))
    with pytest.raises(AccessDenied):
        await use_case.force_abort(ANONYMOUS, SCOPE, "tid")
    assert coordinator.aborted == []


class GroupsAtTheirBound:
    """A broker that already holds as many consumer groups as it may."""

    def admit(self, group: str) -> None:
        raise TooManyConsumerGroups(f"{group!r} would be one group too many")


def test_consumed_offsets_that_would_begin_a_group_past_the_bound_are_refused_and_kept_nowhere() -> None:
    coordinator, topics = FakeCoordinator(), FakeTopics()
    topics.add("ORDERS")
    use_case = ProducerTransactions(Access(None), coordinator, Any, topics, FakeSender(FakeLog()), Any, GroupsAtTheirBound())  # type: ignore[arg-type]
    actor = use_case.stepping(ANONYMOUS, SCOPE, "tid")
    with pytest.raises(TooManyConsumerGroups):
        use_case.add_offsets(actor, 1, 0, 0, "new-group", {"ORDERS": [(0, 5)]})
    assert coordinator.added == []
