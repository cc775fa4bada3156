"""Reading the half and op queues back on start: every intact record, and what an op record says of its transaction.

Used by ``TransactionService`` to rebuild its index; damaged records are reported by the store and passed over.
"""

from __future__ import annotations

from collections.abc import Iterator

from halfmq.broker.store.damaged_records import DamagedRecordError
from halfmq.broker.store.message_store import MessageStore
from halfmq.broker.store.record import StoredMessage
from halfmq.broker.store.topics import OP_HALF_TOPIC
from halfmq.wire import TransactionState

from . import record_names as names
from .half_records import Tx


def scan(store: MessageStore, topic: str, start: int) -> Iterator[StoredMessage]:
    """Every intact record of a system queue from ``start`` (the store's own scan, one queue per topic)."""
    return store.intact_records(topic, 0, start)


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


def final_of(store: MessageStore, op: StoredMessage) -> StoredMessage | None:
    """The final message a commit op was written with (it lies just before the op), if readable."""
    if names.FINAL_SIZE not in op.properties:
        return None
    try:
        return store.read_at(op.commit_log_offset - int(op.properties[names.FINAL_SIZE]))
    except DamagedRecordError:
        return None  # reported by the store; the transaction's state is still known from its op


def uniq_key_at(store: MessageStore, half_clog: int) -> str:
    try:
        return store.read_at(half_clog).properties.get(names.UNIQ_KEY, "")
    except DamagedRecordError:
        return ""
