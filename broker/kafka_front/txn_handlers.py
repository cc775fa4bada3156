"""Kafka's transactional producer on halfmq's producer transactions (DESIGN section 11): one coordinator for both.

InitProducerId with a transactional id is the coordinator's ``init`` (a new epoch fences the old producer and aborts
its open transaction); the first AddPartitionsToTxn of a transaction is its ``begin``; each transactional Produce to a
partition is one ``add_messages`` step, held by the coordinator until EndTxn commits it (then every front sees the
messages at once, at the offsets they get then) or aborts it. halfmq numbers a transaction's steps (begin 0, then 1,
2, …); the Kafka client does not, so the front keeps the next step of each transactional id it serves (bounded, least
recently used forgotten: a forgotten id's next step is refused and its client aborts). A retried batch (the same
first sequence as one of the partition's last five) is answered without a second step. The answer to a transactional
Produce has no offset (-1): the messages get theirs at the commit.

Consumed offsets in the transaction (``send_offsets_to_transaction``): AddOffsetsToTxn begins the transaction if
nothing did yet (as in Kafka); each TxnOffsetCommit is one step holding the group's offsets with the transaction's
acks (``add_offsets``), written on its commit record and moved at the commit, never on an abort; a transaction open
when the broker stops is aborted at its restart, so its offsets never move. They count against the transaction's
acks bound (``HALFMQ_BROKER_PRODUCER_TXN_MAX_ACKS``): past it, MESSAGE_TOO_LARGE and the client aborts. A
TxnOffsetCommit (v3+) carrying its consumer's group metadata is checked against the group first (KIP-447,
group_membership.check_txn_offset_commit): a zombie producer whose consumer was rebalanced away is refused
(ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID), holds no step, and its client aborts.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import msgspec
from kafka import errors as kafka_errors
from kafka.protocol.producer import AddOffsetsToTxnResponse, AddPartitionsToTxnResponse, EndTxnResponse

from halfmq.broker.usecases.caller import Principal
from halfmq.errors import BrokerError
from halfmq.wire import BeginTxnRequest, EndTxnRequest, TxnMessage, TxnMessagesRequest

from . import error_answers
from .calls import CoordinatedHandlers
from .error_codes import kafka_code
from .errors import InvalidRecord, KafkaRefusal, TransactionAbortable, TransactionNotBegun
from .group_coordinator import GroupCoordinator
from .group_membership import MembershipError
from .record_batches import RecordBatch
from .record_mapping import outgoing
from .request_header import RequestHeader

INVALID_TXN_STATE = int(kafka_errors.InvalidTxnStateError.errno)
TRANSACTION_ABORTABLE = int(kafka_errors.TransactionAbortableError.errno)


class TxnSteps:
    """The next step number of each open transaction the front serves, for at most ``bound`` transactional ids; and,
    for as many, the transaction the broker aborted whose abort the producer has since sent (``told``)."""

    def __init__(self, bound: int) -> None:
        self.bound = bound
        self._next: OrderedDict[str, int] = OrderedDict()
        self._told: OrderedDict[str, int] = OrderedDict()

    def told(self, tid: str, number: int) -> None:
        """The producer sent its abort of transaction ``number``, which the broker had aborted."""
        self._told[tid] = number
        self._told.move_to_end(tid)
        while len(self._told) > self.bound:
            self._told.popitem(last=False)

    def was_told(self, tid: str, number: int) -> bool:
        return self._told.get(tid) == number

    def begun(self, tid: str) -> bool:
        return tid in self._next

    def begin(self, tid: str) -> None:
        self._next[tid] = 1
        self._next.move_to_end(tid)
        while len(self._next) > self.bound:
            self._next.popitem(last=False)

    def take(self, tid: str) -> int:
        step = self._next[tid]
        self._next[tid] = step + 1
        self._next.move_to_end(tid)
        return step

    def end(self, tid: str) -> None:
        self._next.pop(tid, None)


class TxnHandlers(CoordinatedHandlers):
    """``coordinator``: the members and generations a TxnOffsetCommit's group metadata is checked against (KIP-447)."""

    def __init__(self, current: Callable[[], Any], principal: Callable[[], Principal], steps: TxnSteps, coordinator: GroupCoordinator) -> None:
        super().__init__(current, principal, coordinator)
        self.steps = steps

    def _actor(self, tid: str, api: str, header: RequestHeader) -> Any:
        uc, who, scope = self.using(header, api)
        return uc.producer_transactions.stepping(who, scope, tid)

    async def init(self, tid: str, timeout_ms: int, header: RequestHeader) -> tuple[int, int]:
        """A transactional id's producer id and new epoch (its open transaction, if any, aborted)."""
        uc, who, scope = self.using(header, "InitProducerId")
        result = await uc.producer_transactions.init(who, scope, tid, timeout_ms if timeout_ms > 0 else None)
        self.steps.end(tid)
        return int(result.producer_id), int(result.epoch)

    async def add_partitions(self, request: Any, header: RequestHeader) -> Any:
        """v0-3 (the clients'): begins the transaction on its first call; halfmq learns the partitions from the messages."""
        tid, pid, epoch = request.v3_and_below_transactional_id, request.v3_and_below_producer_id, request.v3_and_below_producer_epoch
        try:
            await self._begin(tid, pid, epoch, "AddPartitionsToTxn", header)
            code = 0
        except KafkaRefusal as refusal:
            code = refusal.error_code
        except BrokerError as exc:
            code = kafka_code(exc)
        result = AddPartitionsToTxnResponse.AddPartitionsToTxnTopicResult
        partition = result.AddPartitionsToTxnPartitionResult
        return AddPartitionsToTxnResponse(throttle_time_ms=0, error_code=0, results_by_transaction=[], results_by_topic_v3_and_below=[
            result(name=t.name, results_by_partition=[partition(partition_index=i, partition_error_code=code) for i in t.partitions])
            for t in request.v3_and_below_topics])

    async def _begin(self, tid: str, pid: int, epoch: int, api: str, header: RequestHeader) -> None:
        """The transaction's begin, on the first AddPartitionsToTxn or AddOffsetsToTxn of a transaction, answered once
        durable (on a set: on a majority), so a new leader knows the transaction the client goes on with. Refused
        TRANSACTION_ABORTABLE while the producer's last transaction is one the broker aborted and the producer has not
        aborted since: the call may be that transaction's, its first ones served by a set's previous leader (or before a
        restart), and beginning a new one would commit its offsets without the records sent before."""
        if not self.steps.begun(tid):
            actor, uc = self._actor(tid, api, header), self.current().usecases.producer_transactions
            number = uc.aborted_unseen(actor, pid, epoch)
            if number is not None and not self.steps.was_told(tid, number):
                raise TransactionAbortable(f"transaction {number} of {tid!r} was aborted by the broker (its timeout, a restart "
                                           "or a set's failover): abort it")
            await uc.begin_durably(actor, BeginTxnRequest(producer_id=pid, epoch=epoch, sequence=0))
            self.steps.begin(tid)

    async def add_offsets(self, request: Any, header: RequestHeader) -> Any:
        """The group whose offsets the transaction will commit: the right to consume as it, and the transaction begun."""
        try:
            uc, who, scope = self.using(header, "AddOffsetsToTxn")
            uc.groups.may_join(who, scope, request.group_id)
            await self._begin(request.transactional_id, request.producer_id, request.producer_epoch, "AddOffsetsToTxn", header)
            code = 0
        except KafkaRefusal as refusal:
            code = refusal.error_code
        except BrokerError as exc:
            code = kafka_code(exc, group=True)
        return AddOffsetsToTxnResponse(throttle_time_ms=0, error_code=code)

    async def commit_offsets(self, request: Any, header: RequestHeader) -> Any:
        """TxnOffsetCommit: one step of the transaction holding the group's offsets until EndTxn (every partition of the
        request is answered with the step's one code: it is kept whole or not at all)."""
        tid = request.transactional_id
        offsets = {t.name: [(p.partition_index, p.committed_offset) for p in t.partitions] for t in request.topics}
        try:
            if not self.steps.begun(tid):
                raise TransactionNotBegun(f"transactional id {tid!r} has no transaction begun here (AddOffsetsToTxn first)")
            self.coordinator.check_txn_offset_commit(request.group_id, request.member_id, request.generation_id,
                                                request.group_instance_id if header.api_version >= 3 else None)
            actor = self._actor(tid, "TxnOffsetCommit", header)
            self.current().usecases.producer_transactions.add_offsets(actor, request.producer_id, request.producer_epoch,
                                                                      self.steps.take(tid), request.group_id, offsets)
            code = 0
        except (KafkaRefusal, MembershipError) as refusal:
            code = refusal.error_code
        except BrokerError as exc:
            code = kafka_code(exc, group=True)
        return error_answers.txn_offset_commit(request, code, header.api_version)  # every partition named, with the one code

    def produce(self, tid: str, name: str, index: int, batches: list[RecordBatch], header: RequestHeader) -> None:
        """One transactional Produce partition: a step of the transaction (held until EndTxn)."""
        if not tid or any(b.control or not b.transactional for b in batches) or len({b.producer_id for b in batches}) != 1:
            raise InvalidRecord("a transactional Produce carries its transactional id and transactional batches of one producer")
        if not self.steps.begun(tid):  # begun on a set's previous leader (or before a restart), or never: abort it
            raise TransactionAbortable(f"transactional id {tid!r} has no transaction begun here (a set's leader changed, the "
                                    "broker restarted, or no AddPartitionsToTxn came): abort it")
        messages = [TxnMessage(**msgspec.structs.asdict(outgoing(r, index)), topic=name) for b in batches for r in b.records]
        body = TxnMessagesRequest(producer_id=batches[0].producer_id, epoch=batches[0].producer_epoch, sequence=self.steps.take(tid),
                                  messages=messages)
        self.current().usecases.producer_transactions.add_messages(self._actor(tid, "Produce", header), body)

    async def end(self, request: Any, header: RequestHeader) -> Any:
        tid = request.transactional_id
        uc = self.current().usecases.producer_transactions
        body = EndTxnRequest(producer_id=request.producer_id, epoch=request.producer_epoch)
        try:
            actor = self._actor(tid, "EndTxn", header)
            await (uc.commit(actor, body) if request.committed else uc.abort(actor, body))
            code = 0
            number = None if request.committed else uc.aborted_unseen(actor, request.producer_id, request.producer_epoch)
            if number is not None:
                self.steps.told(tid, number)  # the producer knows now: its next AddPartitionsToTxn begins a new one
        except BrokerError as exc:
            code = kafka_code(exc)
            if code == INVALID_TXN_STATE and request.committed and not self.steps.begun(tid):
                code = TRANSACTION_ABORTABLE  # begun on a set's previous leader: the client aborts it and goes on,
                # where INVALID_TXN_STATE is fatal to librdkafka and kafka-python
        self.steps.end(tid)
        return EndTxnResponse(throttle_time_ms=0, error_code=code, producer_id=request.producer_id, producer_epoch=request.producer_epoch)

