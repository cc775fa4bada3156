"""A restart of the coordinator: every transactional id rebuilt from HALFMQ_TXN_STATE, in one scan of the log.

The scan starts from the acks checkpoint (``store.acks_checkpoint``), if the log still holds what it counts:
the ``acks`` records before it are passed over unread, their offsets taken from it; every other record is read.

Committed acks are re-applied from their commit records (the offsets file may not have caught up before a
crash); what was open is aborted, since it cannot resume. The same scan hands the records of producer ids
without a transactional id, and the numbered sends of every producer, to the idempotent producer's ids.
It also rebuilds the broker's own state from its records (``store.state_records``): the acks of ack
requests, topics, producer registrations and the receipt key. That is how a broker set's new leader has
what the old one had: a set copies nothing beside the log.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from halfmq.broker.idempotence import producer_records as rec
from halfmq.broker.idempotence.producer_records import TxnRecord
from halfmq.broker.store import acks_checkpoint
from halfmq.broker.store import state_records as state
from halfmq.broker.store.message_store import MessageStore
from halfmq.broker.store.record import StoredMessage

from .producer_state_machine import ProducerTxnState
from .producer_txn import AckLedger, ProducerTxn
from .txn_records import AbortedBy, decode_acks

if TYPE_CHECKING:
    from .coordinator import TransactionCoordinator

log = logging.getLogger(__name__)


def replay(coordinator: TransactionCoordinator, txns: dict[str, ProducerTxn], acks: AckLedger) -> None:
    """Rebuild every id from its records into ``txns``; re-apply committed acks to ``acks``; abort what was open."""
    started = time.monotonic()
    checkpoint = acks_checkpoint.load(coordinator.store)
    if checkpoint is not None:
        restore(coordinator.store, acks, checkpoint)
    for record in acks_checkpoint.records(coordinator.store, checkpoint):
        kind = record.properties.get(rec.TXN_OP, "")
        if kind in state.KINDS:
            _replay_state(coordinator, acks, state.StateRecord(kind), record, checkpoint)
        else:
            _replay_one(coordinator, txns, acks, record)
    left_open = [t for t in txns.values() if t.state is ProducerTxnState.ONGOING]
    if left_open:
        coordinator.store.put([coordinator.abort_record(t, AbortedBy.RECOVERY) for t in left_open])
        for txn in left_open:
            coordinator.aborted(txn, AbortedBy.RECOVERY)
        log.warning("aborted %d producer transactions left open by the last run: %s", len(left_open),
                    ", ".join(t.transactional_id for t in left_open))
    coordinator.ids.expire_idle_producers()
    coordinator.ids.forget_past_caps()  # the ids a running broker kept: each principal's most recently used
    if txns:
        log.info("producer transactions rebuilt in %.3fs: %d transactional ids", time.monotonic() - started, len(txns))


def _replay_one(coordinator: TransactionCoordinator, txns: dict[str, ProducerTxn], acks: AckLedger, record: StoredMessage) -> None:
    props = record.properties
    tid, kind = props.get(rec.TXN_ID, ""), props.get(rec.TXN_OP, "")
    producer_id, epoch, number = int(props.get(rec.PRODUCER_ID, 0)), int(props.get(rec.EPOCH, 0)), int(props.get(rec.TXN_NO, 0))
    if not tid:  # a producer id without a transactional id
        coordinator.ids.replay_alone(record)
        return
    if kind == TxnRecord.INIT:
        txns[tid] = ProducerTxn(transactional_id=tid, producer_id=producer_id, epoch=epoch, timeout_ms=int(props.get(rec.TIMEOUT_MS, 60_000)),
                                owner=props.get(rec.OWNER), number=number, sends=coordinator.ids.window())
        coordinator.ids.bind(txns[tid])
        return
    txn = txns.get(tid)
    if txn is None:
        return
    if kind == TxnRecord.SEND:
        if epoch == txn.epoch:
            coordinator.ids.replay_send(txn, record)
    elif kind == TxnRecord.BEGIN:
        txn.state, txn.number, txn.begun_ms, txn.aborted_by = ProducerTxnState.ONGOING, number, record.store_timestamp, None
    elif kind == TxnRecord.COMMIT:
        committed = decode_acks(record.body)
        for group, topic, queue_id, offset in committed:
            acks.restore_acked(group, topic, queue_id, offset)
        txn.state, txn.ended_ms = ProducerTxnState.COMPLETE_COMMIT, record.store_timestamp
        txn.message_count, txn.ack_count = int(props.get(rec.MESSAGES, 0)), len(committed)
        txn.end_answer = coordinator.end_answer(txn, ())
    elif kind == TxnRecord.ABORT:
        txn.state, txn.ended_ms = ProducerTxnState.COMPLETE_ABORT, record.store_timestamp
        txn.aborted_by = AbortedBy(props.get(rec.ABORTED_BY, AbortedBy.PRODUCER.value))
        txn.end_answer = coordinator.end_answer(txn, ())


def _replay_state(coordinator: TransactionCoordinator, acks: AckLedger, kind: state.StateRecord, record: StoredMessage,
                  checkpoint: acks_checkpoint.AcksCheckpoint | None) -> None:
    """A record of the broker's own state (``store.state_records``): what a single broker keeps, rebuilt on any node."""
    if kind is state.StateRecord.ACKS:
        for group, topic, queue_id, offset in state.decode_acks(record.body):
            acks.restore_acked(group, topic, queue_id, offset)
    elif kind is state.StateRecord.OFFSETS_RESET:
        for group, topic, queue_id, offset in state.decode_acks(record.body):
            acks.restore_reset(group, topic, queue_id, offset)
    elif kind is state.StateRecord.GROUP_DELETED:
        _replay_group_deleted(acks, record, checkpoint)
    elif kind in (state.StateRecord.TOPIC, state.StateRecord.TOPIC_DELETED):
        _replay_topic(coordinator.store, acks, kind, record, checkpoint)
    elif kind is state.StateRecord.PRODUCER:
        if coordinator.producers is not None:
            coordinator.producers.replay(state.producer_of(record.properties))
    elif kind is state.StateRecord.RECEIPT_KEY and not acks.key_in_log:  # the first one: written once by the first leader
        acks.use_receipt_key(state.receipt_key_of(record.body))


def _replay_group_deleted(acks: AckLedger, record: StoredMessage, checkpoint: acks_checkpoint.AcksCheckpoint | None) -> None:
    """Forget the group, unless the checkpoint counts this record and holds the group: it consumed again since, and the
    checkpoint (newer) says how far."""
    group = record.properties[state.GROUP]
    counted = checkpoint is not None and record.queue_offset < checkpoint.entries
    if not (counted and checkpoint is not None and any(q.group == group for q in checkpoint.settled)):
        acks.forget(group=group)


def _replay_topic(store: MessageStore, acks: AckLedger, kind: state.StateRecord, record: StoredMessage,
                  checkpoint: acks_checkpoint.AcksCheckpoint | None) -> None:
    """A topic made (it exists with at least its queues) or deleted: it goes (its name, its queues below the ends),
    and its groups' offsets too, unless the acks checkpoint counts the record: then the checkpoint is newer, and what
    it holds of the topic was settled after the deletion."""
    if kind is state.StateRecord.TOPIC:
        store.adopt_topic(*state.topic_of(record.properties))
        return
    deleted = state.topic_deleted_of(record.properties)
    store.delete_topic(deleted.name, deleted.ends, record.commit_log_offset)
    if checkpoint is None or record.queue_offset >= checkpoint.entries:
        acks.forget(topic=deleted.name)


def restore(store: MessageStore, acks: AckLedger, checkpoint: acks_checkpoint.AcksCheckpoint) -> None:
    """What the ``acks`` records before the checkpoint settled: the contiguous offsets first, then those past a gap."""
    for q in checkpoint.settled:
        # set, not only raised: an operator's reset (``offsets-reset``) may have moved it back since the offsets file
        # was written; the records after the checkpoint bring it forward again
        if q.committed > store.reads.queue_range(q.topic, q.queue_id)[0] or store.offsets.get(q.group, q.topic, q.queue_id) is not None:
            store.offsets.move(q.group, q.topic, q.queue_id, q.committed)  # (at the queue's first offset: as if never acked)
    for q in checkpoint.settled:
        for offset in q.past_gap:
            acks.restore_acked(q.group, q.topic, q.queue_id, offset)
