"""A restart of the coordinator: every transactional id rebuilt from the state snapshot and HALFMQ_TXN_STATE's tail.

The replay starts from the newest usable state snapshot (``store.state_snapshot``; what it holds above the store:
``snapshot_state``) and reads the records after its entry; without one (none written yet, or damaged, or counting
what this log does not hold) it reads every record from the first. Both end in the same state: the snapshot holds
exactly what the records before its entry built, less the ids that expired for good.

Committed acks are re-applied from their commit records (the offsets file may not have caught up before a
crash); what was open is aborted, since it cannot resume. The same scan hands the records of producer ids
without a transactional id, and the numbered sends of every producer, to the idempotent producer's ids.
It also rebuilds the broker's own state from its records (``store.state_records``): the acks of ack
requests, topics, producer registrations and the receipt key. That is how a broker set's new leader has
what the old one had: a set copies nothing beside the log (and each node's own snapshot shortens its replay).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, NamedTuple

from halfmq.broker.idempotence import producer_records as rec
from halfmq.broker.idempotence.producer_records import TxnRecord
from halfmq.broker.store import state_records as state
from halfmq.broker.store import state_snapshot
from halfmq.broker.store.message_store import MessageStore
from halfmq.broker.store.record import StoredMessage
from halfmq.broker.store.topics import TXN_STATE_TOPIC

from . import snapshot_state
from .producer_state_machine import ProducerTxnState
from .producer_txn import AckLedger, ProducerTxn
from .txn_records import AbortedBy, decode_acks

if TYPE_CHECKING:
    from .coordinator import TransactionCoordinator

log = logging.getLogger(__name__)


class ReplayReport(NamedTuple):
    """What a replay read: the snapshot's entry it started from (0: none used) and the records it read after it."""

    snapshot_entries: int
    records_read: int


def replay(coordinator: TransactionCoordinator, txns: dict[str, ProducerTxn], acks: AckLedger) -> ReplayReport:
    """Rebuild every id from its records into ``txns``; re-apply committed acks to ``acks``; abort what was open."""
    started = time.monotonic()
    snapshot = state_snapshot.load(coordinator.store)
    parsed = None
    if snapshot is not None:
        try:
            parsed = snapshot_state.parse(snapshot.state)
        except (ValueError, KeyError, TypeError) as exc:
            log.warning("state snapshot not used (%s: %s): the replay reads the log from its first entry", type(exc).__name__, exc)
            snapshot = None
    if snapshot is not None and parsed is not None:
        restore(coordinator.store, acks, snapshot)
        snapshot_state.restore(coordinator, txns, acks, parsed)
    read = 0
    for record in state_snapshot.records(coordinator.store, snapshot):
        read += 1
        kind = record.properties.get(rec.TXN_OP, "")
        if kind in state.KINDS:
            _replay_state(coordinator, acks, state.StateRecord(kind), record)
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
    coordinator.expire_idle_transactional_ids()
    coordinator.ids.forget_past_caps()  # the ids a running broker kept: each principal's most recently used
    report = ReplayReport(snapshot.entries if snapshot is not None else 0, read)
    log.info("state of %s rebuilt in %.3fs: %d records read after the state snapshot's entry %d; %d transactional ids, "
             "%d producer ids", TXN_STATE_TOPIC, time.monotonic() - started, report.records_read, report.snapshot_entries,
             len(txns), len(coordinator.ids.alone()))
    return report


def _replay_one(coordinator: TransactionCoordinator, txns: dict[str, ProducerTxn], acks: AckLedger, record: StoredMessage) -> None:
    props = record.properties
    tid, kind = props.get(rec.TXN_ID, ""), props.get(rec.TXN_OP, "")
    producer_id, epoch, number = int(props.get(rec.PRODUCER_ID, 0)), int(props.get(rec.EPOCH, 0)), int(props.get(rec.TXN_NO, 0))
    if not tid:  # a producer id without a transactional id
        coordinator.ids.replay_alone(record)
        return
    if kind == TxnRecord.INIT:
        _replay_init(coordinator, txns, record, tid, producer_id, epoch, number)
        return
    txn = txns.get(tid)
    if txn is None:
        return
    if kind == TxnRecord.SEND:
        if epoch == txn.epoch:
            coordinator.ids.replay_send(txn, record)
            txn.last_used_ms = max(txn.last_used_ms, record.store_timestamp)  # as ``ProducerIds.sender`` sets it
    elif kind == TxnRecord.BEGIN:
        txn.state, txn.number, txn.begun_ms, txn.aborted_by = ProducerTxnState.ONGOING, number, record.store_timestamp, None
        txn.message_count, txn.ack_count = 0, 0  # as a begin does: what the last transaction held is not this one's
        txn.begun_at = record.commit_log_offset
    elif kind == TxnRecord.COMMIT:
        _replay_commit(coordinator, txn, acks, record)
    elif kind == TxnRecord.ABORT:
        txn.state, txn.ended_ms = ProducerTxnState.COMPLETE_ABORT, record.store_timestamp
        txn.aborted_by = AbortedBy(props.get(rec.ABORTED_BY, AbortedBy.PRODUCER.value))
        txn.end_answer = coordinator.end_answer(txn, ())


def _replay_commit(coordinator: TransactionCoordinator, txn: ProducerTxn, acks: AckLedger, record: StoredMessage) -> None:
    """A commit's acks settled again, and its consumed offsets (Kafka's TxnOffsetCommit) set again: the offsets file
    may not have caught up before a crash."""
    committed = decode_acks(record.body)
    for group, topic, queue_id, offset in committed:
        acks.restore_acked(group, topic, queue_id, offset)
    moved = decode_acks(record.properties.get(rec.OFFSETS, "").encode())
    for group, topic, queue_id, offset in moved:
        acks.restore_reset(group, topic, queue_id, offset)
    txn.state, txn.ended_ms = ProducerTxnState.COMPLETE_COMMIT, record.store_timestamp
    txn.message_count, txn.ack_count = int(record.properties.get(rec.MESSAGES, 0)), len(committed) + len(moved)
    txn.end_answer = coordinator.end_answer(txn, ())


def _replay_init(coordinator: TransactionCoordinator, txns: dict[str, ProducerTxn], record: StoredMessage, tid: str,
                 producer_id: int, epoch: int, number: int) -> None:
    """A transactional id's new producer id or epoch; an old producer id of the same id (it expired) is no one's now."""
    props, old = record.properties, txns.get(tid)
    if old is not None and old.producer_id != producer_id:
        coordinator.ids.unbind(old)
    txns[tid] = ProducerTxn(transactional_id=tid, producer_id=producer_id, epoch=epoch, timeout_ms=int(props.get(rec.TIMEOUT_MS, 60_000)),
                            owner=props.get(rec.OWNER), number=number, sends=coordinator.ids.window(),
                            last_used_ms=record.store_timestamp)
    coordinator.ids.bind(txns[tid])


def _replay_state(coordinator: TransactionCoordinator, acks: AckLedger, kind: state.StateRecord, record: StoredMessage) -> None:
    """A record of the broker's own state (``store.state_records``): what a single broker keeps, rebuilt on any node."""
    if kind is state.StateRecord.ACKS:
        for group, topic, queue_id, offset in state.decode_acks(record.body):
            acks.restore_acked(group, topic, queue_id, offset)
    elif kind is state.StateRecord.OFFSETS_RESET:
        for group, topic, queue_id, offset in state.decode_acks(record.body):
            acks.restore_reset(group, topic, queue_id, offset)
    elif kind is state.StateRecord.GROUP_DELETED:
        acks.forget(group=record.properties[state.GROUP])
    elif kind in (state.StateRecord.TOPIC, state.StateRecord.TOPIC_DELETED):
        _replay_topic(coordinator.store, acks, kind, record)
    elif kind is state.StateRecord.PRODUCER:
        if coordinator.producers is not None:
            coordinator.producers.replay(state.producer_of(record.properties))
    elif kind is state.StateRecord.RECEIPT_KEY and acks.logged_receipt_key is None:  # the first one: written once by the first leader
        acks.use_receipt_key(state.receipt_key_of(record.body))


def _replay_topic(store: MessageStore, acks: AckLedger, kind: state.StateRecord, record: StoredMessage) -> None:
    """A topic made (it exists with at least its queues) or deleted: it goes (its name, its queues below the ends),
    and its groups' offsets too (a record the replay reads comes after the state snapshot's entry: newer than it)."""
    if kind is state.StateRecord.TOPIC:
        store.adopt_topic(*state.topic_of(record.properties))
        return
    deleted = state.topic_deleted_of(record.properties)
    store.delete_topic(deleted.name, deleted.ends, record.commit_log_offset)
    acks.forget(topic=deleted.name)


def restore(store: MessageStore, acks: AckLedger, snapshot: state_snapshot.StateSnapshot) -> None:
    """What the records before the snapshot's entry settled: the contiguous offsets first, then those past a gap."""
    for q in snapshot.settled:
        # set, not only raised: an operator's reset (``offsets-reset``) may have moved it back since the offsets file
        # was written; the records after the checkpoint bring it forward again
        if q.committed > store.reads.queue_range(q.topic, q.queue_id)[0] or store.offsets.get(q.group, q.topic, q.queue_id) is not None:
            store.offsets.move(q.group, q.topic, q.queue_id, q.committed)  # (at the queue's first offset: as if never acked)
    for q in snapshot.settled:
        for offset in q.past_gap:
            acks.restore_acked(q.group, q.topic, q.queue_id, offset)
