"""Reading the half and op queues back on start: every intact record, and what an op record says of its transaction.

Used by ``HalfMessageService`` to rebuild its index; damaged records are reported by the store and passed over.
"""

from __future__ import annotations

from collections.abc import Iterator

from halfmq.broker.store.damaged_records import DamagedRecordError
from halfmq.broker.store.message_store import MessageStore
from halfmq.broker.store.record import StoredMessage
from halfmq.broker.store.topics import OP_HALF_TOPIC
from halfmq.wire import TransactionState

from . import record_names as names
from .half_records import Tx, part_label, part_of


def scan(store: MessageStore, topic: str, start: int) -> Iterator[StoredMessage]:
    """Every intact record of a system queue from ``start`` (the store's own scan, one queue per topic)."""
    return store.reads.intact_records(topic, 0, start)


def tx_from_op(store: MessageStore, op: StoredMessage, state: TransactionState) -> Tx:
    """A resolved transaction whose half lies before the rebuild's start, from its op (or CHECK_MAX copy)."""
    props = op.properties
    half_clog = int(props.get(names.HALF_CLOG, op.commit_log_offset))
    msg_id = props.get(names.UNIQ_KEY) or uniq_key_at(store, half_clog)
    return Tx(
        props.get(names.TRANSACTION_ID, ""),
        props.get(names.PRODUCER_GROUP, ""),
        state,
        half_clog,
        int(op.body or b"0") if op.topic == OP_HALF_TOPIC else -1,
        int(props.get(names.BORN_MS, op.born_timestamp)),
        msg_id,
        0,
        resolved_ms=op.store_timestamp,
        check_times=int(props.get(names.CHECK_TIMES, 0)),
    )


def parts_from(store: MessageStore, first: StoredMessage) -> tuple[StoredMessage, ...]:
    """Every half of the transaction whose first half is ``first``: the others follow it in the same write group.

    A write group is contiguous in the commit log, so part i+1 starts where part i ends; each is checked to be the
    part it should be (a DamagedRecordError otherwise).
    """
    _, count = part_of(first.properties)
    parts = [first]
    txid = first.properties.get(names.TRANSACTION_ID)
    offset = first.commit_log_offset + first.size
    for index in range(2, count + 1):
        part = store.reads.read_at(offset)
        if part.properties.get(names.TRANSACTION_ID) != txid or part.properties.get(names.HALF_PART) != part_label(index, count):
            raise DamagedRecordError(offset, f"not part {part_label(index, count)} of transaction {txid}")
        parts.append(part)
        offset += part.size
    return tuple(parts)


def final_of(store: MessageStore, op: StoredMessage) -> StoredMessage | None:
    """The (first) final message a commit op was written with (the finals lie just before the op), if readable."""
    if names.FINAL_SIZE not in op.properties:
        return None
    try:
        return store.reads.read_at(op.commit_log_offset - int(op.properties[names.FINAL_SIZE]))
    except DamagedRecordError:
        return None  # reported by the store; the transaction's state is still known from its op


def uniq_key_at(store: MessageStore, half_clog: int) -> str:
    try:
        return store.reads.read_at(half_clog).properties.get(names.UNIQ_KEY, "")
    except DamagedRecordError:
        return ""
