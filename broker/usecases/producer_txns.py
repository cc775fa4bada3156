"""Producer transactions (Kafka semantics, DESIGN section 11): init, begin, messages, acks, commit, abort.

Thin: the guard decides who may act for a transactional id (``publish`` on
``transactional-id:{tid}``, plus ``publish`` on every topic written and
``subscribe`` on every group and topic acked), then the domain service does
the rest. An operator abort needs ``admin`` on the transactional id. The
steps of a transaction also need the producer id to be the caller's: the
principal whose ``init`` obtained it (PRODUCER_ID_NOT_OWNED otherwise,
``TransactionCoordinator.check_acting``). A new id's name is checked where it
is created (``TransactionCoordinator.init``). The answers are rendered by
halfmq.broker.usecases.answers from the coordinator's typed results.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from halfmq import wire
from halfmq.broker.producer_transactions.txn_records import AbortedBy
from halfmq.broker.protocol import BeginTxnRequest, EndTxnRequest, OutgoingMessage, TxnAcksRequest, TxnMessagesRequest
from halfmq.broker.security.policy import Action, Kind, Principal, Resource
from halfmq.broker.usecases.answers import acks_answer, begin_answer, end_answer, init_answer, messages_answer, producer_id_answer, view_answer

from .caller import Scope

if TYPE_CHECKING:
    from halfmq.broker.runtime import BrokerRuntime


def _tid_resource(tid: str) -> Resource:
    return Resource(Kind.TRANSACTIONAL_ID, tid)


def acting(rt: BrokerRuntime, who: Principal, scope: Scope, tid: str, action: Action = Action.PUBLISH) -> Principal:
    """``who``, allowed ``action`` on the transactional id (AccessDenied otherwise)."""
    rt.access.authorize(who, action, _tid_resource(tid), scope)
    return who


def stepping(rt: BrokerRuntime, who: Principal, scope: Scope, tid: str) -> Principal:
    """``who``, allowed to take a step of ``tid``'s transaction: checked before the step's body is read."""
    rt.access.authorize(who, Action.PUBLISH, _tid_resource(tid), scope)
    rt.producer_txns.check_acting(tid, who.name)  # its producer id is the principal's that initialised it
    return who


def list_ids(rt: BrokerRuntime, who: Principal) -> wire.TransactionalIdList:
    """The transactional ids ``who`` may describe."""
    txns = [t for t in rt.producer_txns.all() if rt.access.allows(who, Action.DESCRIBE, _tid_resource(t.transactional_id))]
    return wire.TransactionalIdList(count=len(txns), transactional_ids=[view_answer(rt.producer_txns.view(t)) for t in txns])


def describe(rt: BrokerRuntime, who: Principal, scope: Scope, tid: str) -> wire.TransactionalIdView:
    acting(rt, who, scope, tid, Action.DESCRIBE)
    return view_answer(rt.producer_txns.view(rt.producer_txns.get(tid)))


async def init(rt: BrokerRuntime, who: Principal, scope: Scope, tid: str, timeout_ms: int | None) -> wire.TxnInitResult:
    acting(rt, who, scope, tid)
    return init_answer(await rt.producer_txns.init(tid, timeout_ms, who.name))


def begin(rt: BrokerRuntime, tid: str, body: BeginTxnRequest) -> wire.TxnBeginResult:
    return begin_answer(rt.producer_txns.begin(tid, body.producer_id, body.epoch, body.sequence))


def add_messages(rt: BrokerRuntime, who: Principal, scope: Scope, tid: str, body: TxnMessagesRequest) -> wire.TxnMessagesResult:
    """Every message is checked (publish on its topic, its shape) before anything is kept or a topic created."""
    by_topic: dict[str, list[OutgoingMessage]] = {}
    for msg in body.messages:
        by_topic.setdefault(msg.topic, []).append(msg)
    items, missing = [], []
    for topic, batch in by_topic.items():
        rt.access.authorize(who, Action.PUBLISH, Resource.topic(topic), scope)
        cfg, exists = rt.topics.writable(topic)
        if not exists:
            missing.append(cfg)
        items.extend(rt.sender.prepare_many(cfg, batch))
    holder = who.name if rt.access.enabled else None  # with auth off everyone is anonymous: only the broker-wide cap
    return messages_answer(rt.producer_txns.add_messages(tid, body.producer_id, body.epoch, body.sequence, items, missing, principal=holder))


def add_acks(rt: BrokerRuntime, who: Principal, scope: Scope, tid: str, body: TxnAcksRequest) -> wire.TxnAcksResult:
    receipts = rt.delivery.parse_receipts(body.receipt_handles)
    for h in receipts:  # one service cannot settle another's deliveries
        rt.access.authorize(who, Action.SUBSCRIBE, Resource.group(h.group), scope)
        rt.access.authorize(who, Action.SUBSCRIBE, Resource.topic(h.topic), scope)
    return acks_answer(rt.producer_txns.add_acks(tid, body.producer_id, body.epoch, body.sequence, receipts))


async def commit(rt: BrokerRuntime, tid: str, body: EndTxnRequest) -> wire.TxnEndResult:
    return end_answer(await rt.producer_txns.commit(tid, body.producer_id, body.epoch))


async def abort(rt: BrokerRuntime, tid: str, body: EndTxnRequest) -> wire.TxnEndResult:
    return end_answer(await rt.producer_txns.abort(tid, body.producer_id, body.epoch))


async def abort_now(rt: BrokerRuntime, tid: str) -> wire.TxnEndResult:
    """An operator ends a stuck transaction now (its producer's next request learns TRANSACTION_ABORTED)."""
    return end_answer(await rt.producer_txns.abort(tid, None, None, by=AbortedBy.OPERATOR))


async def force_abort(rt: BrokerRuntime, who: Principal, scope: Scope, tid: str) -> wire.TxnEndResult:
    """``abort_now`` through the API: ``admin`` on the transactional id (the console's session is a cluster admin)."""
    acting(rt, who, scope, tid, Action.ADMIN)
    return await abort_now(rt, tid)


async def new_producer_id(rt: BrokerRuntime, scope: Scope) -> wire.ProducerIdResult:
    """An idempotent producer id, bound to the principal that gets it; anyone allowed to publish somewhere may."""
    who = rt.access.require_publisher(scope)
    return producer_id_answer(await rt.producer_ids.new_producer_id(who.name))
