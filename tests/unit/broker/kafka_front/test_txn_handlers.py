"""The Kafka front's transactions across a set's failover (or a restart): a batch of a transaction this node did not
begin is to be aborted, and so is an implicit begin while the producer's last transaction is one the broker aborted."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from kafka.errors import TransactionAbortableError

from halfmq.broker.delivery.delivery_service import DeliveryPolicy, DeliveryService
from halfmq.broker.kafka_front.errors import TransactionAbortable
from halfmq.broker.kafka_front.group_coordinator import GroupCoordinator
from halfmq.broker.kafka_front.record_batches import Record, decode_batches, encode_batch
from halfmq.broker.kafka_front.request_header import RequestHeader
from halfmq.broker.kafka_front.txn_handlers import TxnHandlers, TxnSteps
from halfmq.broker.producer_transactions.coordinator import TransactionCoordinator
from halfmq.broker.producer_transactions.producer_state_machine import ProducerTxnState
from halfmq.broker.security.access import ANONYMOUS
from halfmq.broker.store.message_store import MessageStore, StoreConfig
from halfmq.broker.usecases.producer_txns import ProducerTransactions

from ..half_messages.fakes import FakeClock


def test_a_batch_of_a_transaction_begun_on_a_previous_leader_is_transaction_abortable_and_adds_nothing() -> None:
    """A set's new leader holds no step of a transaction begun on the old one: TRANSACTION_ABORTABLE, which kafka-python
    and librdkafka answer with an abort (INVALID_TXN_STATE is fatal to kafka-python)."""
    added: list[object] = []
    runtime = SimpleNamespace(usecases=SimpleNamespace(producer_transactions=SimpleNamespace(
        stepping=lambda *_: None, add_messages=lambda _actor, body: added.append(body))))
    txns = TxnHandlers(lambda: runtime, lambda: ANONYMOUS, TxnSteps(10), GroupCoordinator(10, 10))
    batches = decode_batches(encode_batch([Record(0, 1, None, b"v", ())], producer_id=7, producer_epoch=0, base_sequence=3,
                                          transactional=True))
    header = RequestHeader(api_key=0, api_version=9, correlation_id=1, client_id="t", flexible=True, body_offset=0)
    with pytest.raises(TransactionAbortable) as refused:
        txns.produce("tx-1", "T", 0, batches, header)
    assert refused.value.kafka_error is TransactionAbortableError and added == []


class Coordinated:
    """A real transaction coordinator on a real store, its producer-transactions use case (any principal may act), and
    a Kafka front's transaction handlers over it; ``restart`` opens the store again with a new front, as a set's next
    leader does (the transaction open at the restart is aborted by its replay)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.awaited: list[int] = []  # the log ends the coordinator waited to be durable at, in order
        self.open()

    async def durable(self, offset: int) -> None:
        self.awaited.append(offset)

    def open(self) -> None:
        self.store = MessageStore(StoreConfig(self.path), clock=FakeClock())
        self.store.create_topic("OUT", 1)
        delivery = DeliveryService(self.store, DeliveryPolicy(), clock=FakeClock(), key=b"k" * 32)
        self.coordinator = TransactionCoordinator(self.store, delivery, self.durable, clock=FakeClock())
        access = SimpleNamespace(transactional_id_actor=lambda who, scope, tid: SimpleNamespace(transactional_id=tid, principal=who,
                                                                                                   scope=scope))
        uc = ProducerTransactions(access, self.coordinator, None, None, None, None, None)  # type: ignore[arg-type]
        runtime = SimpleNamespace(usecases=SimpleNamespace(producer_transactions=uc, groups=SimpleNamespace(may_join=lambda *_: None)))
        self.front = TxnHandlers(lambda: runtime, lambda: ANONYMOUS, TxnSteps(10), GroupCoordinator(10, 10))

    def restart(self) -> None:
        self.store.close()
        self.open()

    async def add_partitions(self, tid: str, pid: int, epoch: int) -> int:
        request = SimpleNamespace(v3_and_below_transactional_id=tid, v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
                                  v3_and_below_topics=[SimpleNamespace(name="OUT", partitions=[0])])
        answer = await self.front.add_partitions(request, header(24))
        return int(answer.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code)

    async def add_offsets(self, tid: str, pid: int, epoch: int) -> int:
        request = SimpleNamespace(transactional_id=tid, producer_id=pid, producer_epoch=epoch, group_id="copier")
        return int((await self.front.add_offsets(request, header(25))).error_code)

    async def end(self, tid: str, pid: int, epoch: int, committed: bool) -> int:
        request = SimpleNamespace(transactional_id=tid, producer_id=pid, producer_epoch=epoch, committed=committed)
        return int((await self.front.end(request, header(26))).error_code)


def header(api_key: int) -> RequestHeader:
    return RequestHeader(api_key=api_key, api_version=3, correlation_id=1, client_id="t", flexible=False, body_offset=0)


async def test_a_transaction_a_restart_aborted_is_refused_abortable_until_its_producer_aborts_it_then_the_next_begins(tmp_path: Path) -> None:
    """The Kafka client begins a transaction implicitly: an AddOffsetsToTxn reaching the next leader may belong to the
    transaction open at the kill (its records gone with it), so beginning a new one would commit its offsets without
    them. Refused TRANSACTION_ABORTABLE instead, begun only once the producer has sent its abort."""
    broker = Coordinated(tmp_path)
    init = await broker.coordinator.init("copier-1", None, "anonymous")
    pid, epoch = init.producer_id, init.epoch
    assert await broker.add_partitions("copier-1", pid, epoch) == 0  # begun on the leader that is killed
    broker.restart()
    try:
        assert await broker.add_offsets("copier-1", pid, epoch) == TransactionAbortableError.errno
        assert await broker.add_partitions("copier-1", pid, epoch) == TransactionAbortableError.errno
        assert broker.coordinator.get("copier-1").state is ProducerTxnState.COMPLETE_ABORT  # nothing begun
        assert await broker.end("copier-1", pid, epoch, committed=False) == 0
        assert await broker.add_offsets("copier-1", pid, epoch) == 0
        assert broker.coordinator.get("copier-1").state is ProducerTxnState.ONGOING
        assert await broker.end("copier-1", pid, epoch, committed=True) == 0
    finally:
        broker.store.close()


async def test_a_producer_whose_last_transaction_ended_before_the_restart_begins_the_next_at_once(tmp_path: Path) -> None:
    broker = Coordinated(tmp_path)
    init = await broker.coordinator.init("copier-2", None, "anonymous")
    pid, epoch = init.producer_id, init.epoch
    assert await broker.add_partitions("copier-2", pid, epoch) == 0
    assert await broker.end("copier-2", pid, epoch, committed=True) == 0
    broker.restart()
    try:
        assert await broker.add_offsets("copier-2", pid, epoch) == 0
        assert broker.coordinator.get("copier-2").state is ProducerTxnState.ONGOING
    finally:
        broker.store.close()


async def test_an_implicit_begin_is_answered_once_its_record_is_durable(tmp_path: Path) -> None:
    """On a set, durable is on a majority: a new leader then knows the transaction the client goes on with, and refuses
    its next AddOffsetsToTxn (above) instead of beginning a new transaction without the records the old leader held."""
    broker = Coordinated(tmp_path)
    init = await broker.coordinator.init("copier-3", None, "anonymous")
    try:
        broker.awaited.clear()
        assert await broker.add_partitions("copier-3", init.producer_id, init.epoch) == 0
        assert broker.awaited and broker.awaited[-1] > broker.coordinator.get("copier-3").begun_at  # past the begin record
        broker.awaited.clear()
        assert await broker.add_offsets("copier-3", init.producer_id, init.epoch) == 0
        assert broker.awaited == []  # the same transaction: begun once
    finally:
        broker.store.close()
