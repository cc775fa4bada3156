"""What a state snapshot (store.state_snapshot) holds above the store: what the replay of HALFMQ_TXN_STATE rebuilds.

- ``alone``: the producer ids obtained without a transactional id that are kept now (an idle one expired and one
  forgotten for its principal's newer ones are not), each with its window as it is kept in memory: the high-water
  mark and, per remembered number, where its records start and how many there are (``SentRef``), never its answer;
- ``txns``: every transactional id kept now (one idle past ``transactional_id_expiry`` is not) with its producer id,
  epoch, owner, window and its last transaction's state (an open one is aborted by the replay's end, as ever);
- ``registrations``: the producers registered for check-backs; ``topics``: every topic, its queue count and its own retention; ``deleted_topics``:
  every topic an operator deleted (its deletion's log offset and each queue's end then: a topic made again reads past them);
- ``receipt_key``: the key receipt handles are signed with, once the log names it (hex).

``state_of`` runs on the event loop between two requests and copies (numbers, strings, the immutable ``SentRef``
tuples); the JSON is written later in a thread. ``parse`` reads it all back before anything changes (a damaged
one fails there, and the replay scans from the first entry instead); ``restore`` then applies it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from halfmq.broker.idempotence.producer_ids import SentRef
from halfmq.broker.idempotence.producer_records import SendKind
from halfmq.broker.idempotence.producer_state import ProducerState
from halfmq.broker.store.state_records import ProducerRecord, TopicRecord

from .producer_state_machine import ProducerTxnState
from .producer_txn import AckLedger, ProducerTxn
from .txn_records import AbortedBy

if TYPE_CHECKING:
    from .coordinator import TransactionCoordinator

Window = tuple[int, dict[int, SentRef]]  # the high-water mark, and each remembered number's SentRef


@dataclass(frozen=True)
class AloneRow:
    producer_id: int
    epoch: int
    owner: str | None
    last_used_ms: int
    window: Window


@dataclass(frozen=True)
class TxnRow:
    transactional_id: str
    producer_id: int
    epoch: int
    owner: str | None
    number: int
    timeout_ms: int
    state: ProducerTxnState
    begun_ms: int
    ended_ms: int | None
    aborted_by: AbortedBy | None
    message_count: int
    ack_count: int
    last_used_ms: int
    window: Window


@dataclass(frozen=True)
class SnapshotState:
    alone: tuple[AloneRow, ...]
    txns: tuple[TxnRow, ...]
    registrations: tuple[ProducerRecord, ...]
    topics: tuple[TopicRecord, ...]
    receipt_key: bytes | None
    deleted_topics: tuple[tuple[str, int, dict[int, int]], ...] = ()


def _window_copy(producer: ProducerState) -> list[Any]:
    return [producer.sends.high, list(producer.sends.answers.items())]


def _counts(txn: ProducerTxn) -> tuple[int, int]:
    """The messages and acks of the last transaction as its records tell them: a commit's; none of another's."""
    return (txn.message_count, txn.ack_count) if txn.state is ProducerTxnState.COMPLETE_COMMIT else (0, 0)


def state_of(coordinator: TransactionCoordinator, acks: AckLedger) -> dict[str, Any]:
    """What the snapshot keeps of the state now (on the loop: copies, JSON-able once NamedTuples are lists)."""
    registrations = coordinator.producers.registrations() if coordinator.producers is not None else []
    key = acks.logged_receipt_key
    return {
        "alone": [[p.producer_id, p.epoch, p.owner, p.last_used_ms, _window_copy(p)] for p in coordinator.ids.alone()],
        "txns": [[t.transactional_id, t.producer_id, t.epoch, t.owner, t.number, t.timeout_ms, t.state.value, t.begun_ms,
                  t.ended_ms, t.aborted_by.value if t.aborted_by else None, *_counts(t), t.last_used_ms, _window_copy(t)]
                 for t in coordinator.all()],
        "registrations": [list(r[:4]) for r in registrations],
        "topics": [[t.name, t.queues, t.retention_ms, t.retention_bytes] for t in coordinator.store.topics.all()],
        "deleted_topics": [[name, at, [[qid, end] for qid, end in sorted(ends.items())]]
                           for name, at in coordinator.store.topics.deleted_at.items()
                           for ends in (coordinator.store.reads.floors_of(name),)],
        "receipt_key": key.hex() if key is not None else None,
    }


def _window(raw: Any) -> Window:
    high, answers = raw
    return int(high), {int(n): SentRef(SendKind(kind), int(first), int(count)) for n, (kind, first, count) in answers}


def _owner(raw: Any) -> str | None:
    return None if raw is None else str(raw)


def parse(raw: Any) -> SnapshotState:
    """The state ``state_of`` wrote, read whole (ValueError, KeyError or TypeError when it is not that)."""
    alone = tuple(AloneRow(int(pid), int(epoch), _owner(owner), int(used), _window(window))
                  for pid, epoch, owner, used, window in raw["alone"])
    txns = tuple(TxnRow(str(tid), int(pid), int(epoch), _owner(owner), int(number), int(timeout), ProducerTxnState(state),
                        int(begun), None if ended is None else int(ended), None if by is None else AbortedBy(by),
                        int(messages), int(acked), int(used), _window(window))
                 for tid, pid, epoch, owner, number, timeout, state, begun, ended, by, messages, acked, used, window in raw["txns"])
    registrations = tuple(ProducerRecord(str(g), str(c), url, address, expired=False) for g, c, url, address in raw["registrations"])
    topics = tuple(TopicRecord(str(row[0]), int(row[1]), *(None if v is None else int(v) for v in row[2:4])) for row in raw["topics"])
    key = raw["receipt_key"]
    deleted = tuple((str(name), int(at), {int(qid): int(end) for qid, end in ends}) for name, at, ends in raw.get("deleted_topics", []))
    return SnapshotState(alone, txns, registrations, topics, None if key is None else bytes.fromhex(key), deleted)


def restore(coordinator: TransactionCoordinator, txns: dict[str, ProducerTxn], acks: AckLedger, state: SnapshotState) -> None:
    """Apply what ``parse`` read: the state the records before the snapshot's entry built (a deleted topic first: one
    made again under its name after the deletion is among ``topics``)."""
    for name, at, ends in state.deleted_topics:
        coordinator.store.delete_topic(name, ends, at)
    for topic in state.topics:
        coordinator.store.adopt_topic(*topic)
    if state.receipt_key is not None:
        acks.use_receipt_key(state.receipt_key)
    if coordinator.producers is not None:
        for registration in state.registrations:
            coordinator.producers.replay(registration)
    ids = coordinator.ids
    for a in state.alone:
        ids.restore_alone(ProducerState(transactional_id="", producer_id=a.producer_id, epoch=a.epoch, owner=a.owner,
                                        sends=ids.window_of(*a.window), last_used_ms=a.last_used_ms))
    for t in state.txns:
        txn = ProducerTxn(transactional_id=t.transactional_id, producer_id=t.producer_id, epoch=t.epoch, owner=t.owner,
                          number=t.number, timeout_ms=t.timeout_ms, sends=ids.window_of(*t.window), last_used_ms=t.last_used_ms,
                          state=t.state, begun_ms=t.begun_ms, ended_ms=t.ended_ms, aborted_by=t.aborted_by,
                          message_count=t.message_count, ack_count=t.ack_count)
        if txn.state in (ProducerTxnState.COMPLETE_COMMIT, ProducerTxnState.COMPLETE_ABORT):
            txn.end_answer = coordinator.end_answer(txn, ())
        txns[txn.transactional_id] = txn
        ids.bind(txn)
