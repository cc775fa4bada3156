"""Producer transactions (Kafka semantics, DESIGN section 11): init, begin, messages, acks, commit, abort.

Thin: ``Access`` decides who may act for a transactional id (``publish`` on
``transactional-id:{tid}``, plus ``publish`` on every topic written and
``subscribe`` on every group and topic acked), then the domain service does
the rest. An operator abort needs ``admin`` on the transactional id. The
steps of a transaction also need the producer id to be the caller's: the
principal whose ``init`` obtained it (PRODUCER_ID_NOT_OWNED otherwise,
``TransactionCoordinator.check_acting``), so a step takes the
``TransactionalIdActor`` grant ``stepping`` answers. A new id's name is checked where it
is created (``TransactionCoordinator.init``). The answers are rendered by
halfmq.broker.usecases.answers from the coordinator's typed results.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from halfmq import wire
from halfmq.broker.producer_transactions.producer_state_machine import ProducerTxnState
from halfmq.broker.producer_transactions.txn_records import AbortedBy
from halfmq.broker.security.access import Access, ClusterAdmin, TransactionalIdActor, transactional_id
from halfmq.broker.security.policy import Action, Principal
from halfmq.broker.store.store_types import PutItem
from halfmq.broker.store.topics import TopicConfig
from halfmq.broker.usecases.answers import acks_answer, begin_answer, end_answer, init_answer, messages_answer, producer_id_answer, view_answer
from halfmq.errors import InvalidQueueId, UnknownTransactionalId
from halfmq.wire import BeginTxnRequest, EndTxnRequest, OutgoingMessage, TxnAcksRequest, TxnMessagesRequest

from .caller import Scope
from .ports import AdmitsGroups, Deliveries, Sender, WritableTopics


class Coordinator(Protocol):
    """Kafka-style transactions (``producer_transactions.coordinator.TransactionCoordinator``)."""

    def all(self) -> list[Any]: ...
    def get(self, tid: str) -> Any: ...
    def view(self, txn: Any) -> Any: ...
    def check_acting(self, tid: str, principal: str) -> None: ...
    async def init(self, tid: str, timeout_ms: int | None, owner: str) -> Any: ...
    def begin(self, tid: str, producer_id: int, epoch: int, sequence: int) -> Any: ...
    async def begin_durably(self, tid: str, producer_id: int, epoch: int, sequence: int) -> Any: ...
    def add_messages(self, tid: str, producer_id: int, epoch: int, sequence: int, items: list[PutItem],
                     missing: list[TopicConfig], *, principal: str | None = None) -> Any: ...
    def add_acks(self, tid: str, producer_id: int, epoch: int, sequence: int, receipts: list[Any],
                 offsets: list[tuple[str, str, int, int]] | None = None) -> Any: ...
    async def commit(self, tid: str, producer_id: int, epoch: int) -> Any: ...
    async def abort(self, tid: str, producer_id: int | None, epoch: int | None, by: AbortedBy = ...) -> Any: ...


class NewProducerIds(Protocol):
    async def new_producer_id(self, principal: str) -> Any: ...


@dataclass(eq=False)  # a use case, compared by identity
class ProducerTransactions:
    access: Access
    coordinator: Coordinator
    producer_ids: NewProducerIds
    topics: WritableTopics
    sender: Sender
    deliveries: Deliveries
    groups: AdmitsGroups

    def stepping(self, who: Principal, scope: Scope, tid: str) -> TransactionalIdActor:
        """The grant to take a step of ``tid``'s transaction: checked before the step's body is read."""
        actor = self.access.transactional_id_actor(who, scope, tid)
        self.coordinator.check_acting(tid, who.name)  # its producer id is the principal's that initialised it
        return actor

    def list_ids(self, who: Principal) -> wire.TransactionalIdList:
        """The transactional ids ``who`` may describe."""
        txns = [t for t in self.coordinator.all() if self.access.allows(who, Action.DESCRIBE, transactional_id(t.transactional_id))]
        return wire.TransactionalIdList(count=len(txns), transactional_ids=[view_answer(self.coordinator.view(t)) for t in txns])

    def describe(self, who: Principal, scope: Scope, tid: str) -> wire.TransactionalIdView:
        self.access.authorize(who, Action.DESCRIBE, transactional_id(tid), scope)
        return view_answer(self.coordinator.view(self.coordinator.get(tid)))

    async def init(self, who: Principal, scope: Scope, tid: str, timeout_ms: int | None) -> wire.TxnInitResult:
        self.access.transactional_id_actor(who, scope, tid)
        return init_answer(await self.coordinator.init(tid, timeout_ms, who.name))

    def begin(self, actor: TransactionalIdActor, body: BeginTxnRequest) -> wire.TxnBeginResult:
        return begin_answer(self.coordinator.begin(actor.transactional_id, body.producer_id, body.epoch, body.sequence))

    async def begin_durably(self, actor: TransactionalIdActor, body: BeginTxnRequest) -> wire.TxnBeginResult:
        """``begin``, answered once durable: the Kafka front's implicit begin (TransactionCoordinator.begin_durably)."""
        return begin_answer(await self.coordinator.begin_durably(actor.transactional_id, body.producer_id, body.epoch, body.sequence))

    def aborted_unseen(self, actor: TransactionalIdActor, producer_id: int, epoch: int) -> int | None:
        """The number of the producer's last transaction when the broker aborted it (its timeout, a restart or a set's
        failover, an operator) and the producer (this id and epoch) may not know: a Kafka client begins a transaction
        implicitly, with its first AddPartitionsToTxn or AddOffsetsToTxn, so such a call may belong to that aborted
        transaction. None otherwise (an unknown id, another producer: the begin itself answers them)."""
        try:
            view = self.coordinator.view(self.coordinator.get(actor.transactional_id))
        except UnknownTransactionalId:
            return None
        broker_aborted = view.aborted_by not in (None, AbortedBy.PRODUCER, AbortedBy.NEW_EPOCH)
        if view.state is ProducerTxnState.COMPLETE_ABORT and broker_aborted and (view.producer_id, view.epoch) == (producer_id, epoch):
            return int(view.transaction)
        return None

    def add_messages(self, actor: TransactionalIdActor, body: TxnMessagesRequest) -> wire.TxnMessagesResult:
        """Every message is checked (publish on its topic, its shape) before anything is kept or a topic created."""
        by_topic: dict[str, list[OutgoingMessage]] = {}
        for msg in body.messages:
            by_topic.setdefault(msg.topic, []).append(msg)
        items, missing = [], []
        for topic, batch in by_topic.items():
            self.access.publisher(actor.principal, actor.scope, topic)
            cfg, exists = self.topics.writable(topic)
            if not exists:
                missing.append(cfg)
            items.extend(self.sender.prepare_many(cfg, batch))
        holder = actor.principal.name if self.access.enabled else None  # auth off: everyone is anonymous, only the broker-wide cap
        return messages_answer(self.coordinator.add_messages(actor.transactional_id, body.producer_id, body.epoch, body.sequence,
                                                             items, missing, principal=holder))

    def add_acks(self, actor: TransactionalIdActor, body: TxnAcksRequest) -> wire.TxnAcksResult:
        receipts = self.deliveries.parse_receipts(body.receipt_handles)
        for h in receipts:  # one service cannot settle another's deliveries
            self.access.subscriber(actor.principal, actor.scope, h.group, h.topic)
        return acks_answer(self.coordinator.add_acks(actor.transactional_id, body.producer_id, body.epoch, body.sequence, receipts))

    def add_offsets(self, actor: TransactionalIdActor, producer_id: int, epoch: int, sequence: int, group: str,
                    offsets: dict[str, list[tuple[int, int]]]) -> wire.TxnAcksResult:
        """Consumed offsets committed in the transaction (Kafka's TxnOffsetCommit: topic -> (queue id, the group's next
        offset)): ``subscribe`` on the group and each topic, the topics and queues must exist; they move at the commit."""
        moves: list[tuple[str, str, int, int]] = []
        self.groups.admit(group)  # the commit would begin the group: the broker-wide bound on groups holds here too
        for topic, queues in offsets.items():
            self.access.subscriber(actor.principal, actor.scope, group, topic)
            cfg = self.topics.get(topic)
            if any(not 0 <= qid < cfg.queues for qid, _ in queues):
                raise InvalidQueueId(f"topic {topic!r} has queues 0..{cfg.queues - 1}")
            moves.extend((group, topic, qid, offset) for qid, offset in queues)
        return acks_answer(self.coordinator.add_acks(actor.transactional_id, producer_id, epoch, sequence, [], moves))

    async def commit(self, actor: TransactionalIdActor, body: EndTxnRequest) -> wire.TxnEndResult:
        return end_answer(await self.coordinator.commit(actor.transactional_id, body.producer_id, body.epoch))

    async def abort(self, actor: TransactionalIdActor, body: EndTxnRequest) -> wire.TxnEndResult:
        return end_answer(await self.coordinator.abort(actor.transactional_id, body.producer_id, body.epoch))

    async def abort_now(self, admin: ClusterAdmin, tid: str) -> wire.TxnEndResult:
        """An operator ends a stuck transaction now (its producer's next request learns TRANSACTION_ABORTED)."""
        return await self._abort_now(tid)

    async def _abort_now(self, tid: str) -> wire.TxnEndResult:
        return end_answer(await self.coordinator.abort(tid, None, None, by=AbortedBy.OPERATOR))

    async def force_abort(self, who: Principal, scope: Scope, tid: str) -> wire.TxnEndResult:
        """``abort_now`` through the API: ``admin`` on the transactional id (the console's session is a cluster admin)."""
        self.access.authorize(who, Action.ADMIN, transactional_id(tid), scope)
        return await self._abort_now(tid)

    async def new_producer_id(self, who: Principal, scope: Scope) -> wire.ProducerIdResult:
        """An idempotent producer id, bound to the principal that gets it (an HTTP bearer's, a Kafka connection's SASL
        one); anyone allowed to publish somewhere may."""
        who = self.access.require_publisher(who, scope)
        return producer_id_answer(await self.producer_ids.new_producer_id(who.name))
