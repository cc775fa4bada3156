"""The broker's own state as records of HALFMQ_TXN_STATE: topics, consumer acks, producer registrations, the receipt key.

A single broker and every node of a set write the same records (one path): the log is what a set replicates, so a
node that becomes leader rebuilds this state from it in the coordinator's one scan (``producer_transactions.replay``),
and nothing is copied beside the log. ``TXN_OP`` is the property every record of the topic names its kind with (the
producers' kinds: ``idempotence.producer_records``); these records carry no ``TXN_ID``.

- ``topic``: a topic was created (or its queue count or its own retention changed: ``RETENTION_MS``/``RETENTION_BYTES``,
  absent for the broker's). A follower applies it when it appends the record.
- ``acks``: the offsets one ack request settled, as ``[group, topic, queue, offset]`` rows (the commit record's body),
  tagged ``ACKS_TAG`` (its consume-queue entry tells it apart unread; older ones are untagged). A replay reads only
  the records after the state snapshot (``store.state_snapshot``), which holds what the ones before it settled.
- ``offsets-reset``: an operator moved a group's committed offsets (``[group, topic, queue, offset]`` rows), back or
  forth. Tagged ``ACKS_TAG`` like ``acks``; the state snapshot holds what the ones before it set.
- ``group-deleted``: an operator deleted a consumer group (``GROUP``): its offsets and progress are forgotten. The
  ones before the state snapshot are not read: the snapshot holds no progress of the group, and the offsets file is
  written before the snapshot is (``BrokerRuntime._save_state_snapshot``).
- ``topic-deleted``: an operator deleted a topic (``TOPIC``; ``ENDS``, each queue's end then, as ``queue:end`` pairs).
  Its name leaves the topic table and its groups' offsets are forgotten; its files stay until retention takes them,
  and a topic created again under the name begins at those ends (``ConsumeQueues.floor``), so nothing of the deleted
  one is read again. Applied where a ``topic`` record is: a follower as it appends it, a replay in log order; the ones
  before the state snapshot are not read: the snapshot holds the deleted topics (their ends and where they went).
- ``producer``: a producer registered (or changed its check URL) or expired; heartbeats that change nothing write none.
- ``receipt-key``: the key receipt handles are signed with, written once by the first leader, so every node signs alike.

They are on disk, so a restart reads back exactly what an older broker wrote: rename nothing here.
"""

from __future__ import annotations

from enum import Enum
from typing import NamedTuple

import orjson

from .indexed_keys import INDEX_KEYS, position_key
from .store_types import PutItem
from .topics import TXN_STATE_TOPIC

TXN_OP = "TXN_OP"
TAGS = "TAGS"  # a record's tag, as every message names it (its hash is in the consume-queue entry)
ACKS_TAG = "HALFMQ_ACKS"
TOPIC = "TOPIC"
QUEUES = "QUEUES"
RETENTION_MS = "RETENTION_MS"  # a topic's own retention (absent: the broker's)
RETENTION_BYTES = "RETENTION_BYTES"
GROUP = "GROUP"
CLIENT_ID = "CLIENT_ID"
CHECK_URL = "CHECK_URL"
ADDRESS = "ADDRESS"
EXPIRED = "EXPIRED"  # "1" on a producer's expiry
ENDS = "ENDS"  # a deleted topic's queue ends, "0:12 1:9"


class StateRecord(str, Enum):
    TOPIC = "topic"
    ACKS = "acks"
    OFFSETS_RESET = "offsets-reset"
    GROUP_DELETED = "group-deleted"
    TOPIC_DELETED = "topic-deleted"
    PRODUCER = "producer"
    RECEIPT_KEY = "receipt-key"


KINDS = frozenset(k.value for k in StateRecord)
AckRef = tuple[str, str, int, int]  # group, topic, queue id, queue offset
_ACKS = StateRecord.ACKS.value  # Enum.value on the ack path: a lookup per request saved


# --- acks ---------------------------------------------------------------------------------------
def encode_acks(acks: list[AckRef]) -> bytes:
    return orjson.dumps(acks)


def decode_acks(body: bytes) -> list[AckRef]:
    if not body:
        return []
    return [(str(g), str(t), int(q), int(o)) for g, t, q, o in orjson.loads(body)]


def acks_record(acks: list[AckRef], *, indexed: bool = True) -> PutItem:
    """An ``acks`` record; each acked place in INDEX_KEYS, so a message's journey finds its acks (key_index).

    ``indexed=False`` (the journal off) leaves the places out of the key index: the record is the same state, and a
    journey says "acked" from the group's committed offset instead."""
    props = {TXN_OP: _ACKS, TAGS: ACKS_TAG}
    if indexed:
        props[INDEX_KEYS] = " ".join(position_key(t, q, o) for _, t, q, o in acks)
    return PutItem(TXN_STATE_TOPIC, 0, encode_acks(acks), props, tag=ACKS_TAG)


def offsets_reset_record(moves: list[AckRef]) -> PutItem:
    """An ``offsets-reset`` record: each queue's committed offset from now on (rows as ``acks``'s, not indexed)."""
    return PutItem(TXN_STATE_TOPIC, 0, encode_acks(moves), {TXN_OP: StateRecord.OFFSETS_RESET.value, TAGS: ACKS_TAG}, tag=ACKS_TAG)


def group_deleted_record(group: str) -> PutItem:
    return PutItem(TXN_STATE_TOPIC, 0, b"", {TXN_OP: StateRecord.GROUP_DELETED.value, GROUP: group})


# --- topics -------------------------------------------------------------------------------------
class TopicRecord(NamedTuple):
    name: str
    queues: int
    retention_ms: int | None = None  # the topic's own limits (None: the broker's); every record carries the current ones
    retention_bytes: int | None = None


def topic_record(name: str, queues: int, retention_ms: int | None = None, retention_bytes: int | None = None) -> PutItem:
    props = {TXN_OP: StateRecord.TOPIC.value, TOPIC: name, QUEUES: str(queues)}
    if retention_ms is not None:
        props[RETENTION_MS] = str(retention_ms)
    if retention_bytes is not None:
        props[RETENTION_BYTES] = str(retention_bytes)
    return PutItem(TXN_STATE_TOPIC, 0, b"", props)


def topic_of(props: dict[str, str]) -> TopicRecord:
    ms, size = props.get(RETENTION_MS), props.get(RETENTION_BYTES)
    return TopicRecord(props[TOPIC], int(props[QUEUES]), None if ms is None else int(ms), None if size is None else int(size))


class TopicDeletedRecord(NamedTuple):
    name: str
    ends: dict[int, int]  # queue id -> one past its last entry when the topic was deleted


def topic_deleted_record(name: str, ends: dict[int, int]) -> PutItem:
    ends_text = " ".join(f"{q}:{end}" for q, end in sorted(ends.items()))
    return PutItem(TXN_STATE_TOPIC, 0, b"", {TXN_OP: StateRecord.TOPIC_DELETED.value, TOPIC: name, ENDS: ends_text})


def topic_deleted_of(props: dict[str, str]) -> TopicDeletedRecord:
    pairs = (pair.split(":") for pair in props.get(ENDS, "").split())
    return TopicDeletedRecord(props[TOPIC], {int(q): int(end) for q, end in pairs})


# --- producers ----------------------------------------------------------------------------------
class ProducerRecord(NamedTuple):
    group: str
    client_id: str
    check_url: str | None
    address: str | None
    expired: bool


def producer_record(entry: ProducerRecord) -> PutItem:
    props = {TXN_OP: StateRecord.PRODUCER.value, GROUP: entry.group, CLIENT_ID: entry.client_id}
    if entry.check_url:
        props[CHECK_URL] = entry.check_url
    if entry.address:
        props[ADDRESS] = entry.address
    if entry.expired:
        props[EXPIRED] = "1"
    return PutItem(TXN_STATE_TOPIC, 0, b"", props)


def producer_of(props: dict[str, str]) -> ProducerRecord:
    return ProducerRecord(props[GROUP], props[CLIENT_ID], props.get(CHECK_URL), props.get(ADDRESS), props.get(EXPIRED) == "1")


# --- the receipt key ----------------------------------------------------------------------------
def receipt_key_record(key: bytes) -> PutItem:
    return PutItem(TXN_STATE_TOPIC, 0, key.hex().encode(), {TXN_OP: StateRecord.RECEIPT_KEY.value})


def receipt_key_of(body: bytes) -> bytes:
    return bytes.fromhex(body.decode())
