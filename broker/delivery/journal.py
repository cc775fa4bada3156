"""The journal: deliveries and nacks as records of ``RMQ_SYS_JOURNAL`` (RocketMQ's pop writes a checkpoint per pop).

One record per receive that hands something out, and one per nack call: the consumer group, and per delivery its
``[topic, queue, offset, attempt]`` (the body), with each position in ``INDEX_KEYS`` so a journey finds them in the
key index (store/key_index.py). Written without waiting for the fsync: a journal line lost to a crash costs only
history, and a disk that refuses it refuses no delivery. ``HALFMQ_BROKER_JOURNAL=false`` (``DeliveryPolicy.journal``)
writes none.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from functools import partial
from typing import Protocol

import orjson

from halfmq.broker.store.indexed_keys import INDEX_KEYS, position_key
from halfmq.broker.store.message_store import MessageStore, PutItem, StoreNotWritable
from halfmq.broker.store.record import StoredMessage
from halfmq.wire import MAX_NACK_REASON

log = logging.getLogger(__name__)

JOURNAL_TOPIC = "RMQ_SYS_JOURNAL"
JOURNAL = "JOURNAL"  # what a journal record says happened: one of the two below
DELIVERED = "delivered"
NACKED = "nacked"
CONSUMER_GROUP = "CONSUMER_GROUP"
NACK_REASON = "NACK_REASON"
MAX_REASON = MAX_NACK_REASON

Entry = tuple[str, int, int, int]  # topic, queue id, queue offset, attempt


class Delivered(Protocol):
    @property
    def message(self) -> StoredMessage: ...
    @property
    def delivery_attempt(self) -> int: ...


def record(kind: str, group: str, entries: list[Entry], reason: str | None = None) -> PutItem:
    props = {JOURNAL: kind, CONSUMER_GROUP: group, INDEX_KEYS: " ".join(position_key(t, q, o) for t, q, o, _ in entries)}
    if reason:
        props[NACK_REASON] = reason[:MAX_REASON].replace("\x01", " ").replace("\x02", " ")
    return PutItem(JOURNAL_TOPIC, 0, orjson.dumps(entries), props)


def entries_of(body: bytes) -> list[Entry]:
    return [(str(t), int(q), int(o), int(a)) for t, q, o, a in orjson.loads(body)] if body else []


def deliveries(topic: str, handed_out: Iterable[Delivered]) -> list[Entry]:
    return [(topic, d.message.queue_id, d.message.queue_offset, d.delivery_attempt) for d in handed_out]


def write(store: MessageStore, kind: str, group: str, entries: Iterable[Entry], reason: str | None = None) -> None:
    """Append one journal record, not awaited; a refusing disk loses the line, never the call."""
    listed = list(entries)
    if not listed:
        return
    try:
        store.create_topic(JOURNAL_TOPIC, 1)  # made once, as the first line is written; then a dictionary lookup
        store.put([record(kind, group, listed, reason)])
    except StoreNotWritable as exc:
        log.debug("journal line lost: %s", exc)


def writer(store: MessageStore, enabled: bool) -> Callable[..., None]:
    """The delivery service's one way to the journal: ``write`` to ``store``, or nothing with the journal off
    (``HALFMQ_BROKER_JOURNAL=false``), so the service asks once, not at each delivery."""
    if not enabled:
        return lambda *args: None
    return partial(write, store)
