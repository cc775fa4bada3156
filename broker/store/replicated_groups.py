"""Cutting a leader's log bytes into whole write groups: a follower takes a group entirely or not at all.

A follower appends the bytes unchanged, so it reads of each record only what its
consume-queue entry and its own checks need: the header, the topic and the TAGS
property (a HALFMQ_TXN_STATE record's properties too, which the follower applies).
The CRC is checked over the raw bytes; no body is copied and no properties dict is
built for an ordinary message.
"""

from __future__ import annotations

from typing import NamedTuple

import crc32c

from .indexed_keys import index_keys, raw_index_keys
from .record import FLAG_GROUP_MORE, HEADER, HEADER_SIZE, MAGIC, MAX_RECORD_SIZE, decode_properties, queue_code
from .store_types import ReplicationMismatch
from .topics import TIMER_TOPIC, TXN_STATE_TOPIC

_TAGS = b"TAGS\x01"
_TAGS_AFTER = b"\x02TAGS\x01"
_END = b"\x02"
_DECODED = (TXN_STATE_TOPIC, TIMER_TOPIC)  # records whose properties the follower reads: state it applies, timers' due times


class ReplicatedRecord(NamedTuple):
    """One record of a replicated run: where it is in the fetched bytes and its consume-queue entry."""

    at: int  # its position in the fetched bytes
    size: int
    topic: str
    queue_id: int
    queue_offset: int  # where the leader put it in its queue (a follower begun at a log start pads its queues up to it)
    tag_hash: int  # its consume-queue code (record.queue_code: a timer's due time)
    properties: dict[str, str] | None  # decoded for HALFMQ_TXN_STATE and timer records only
    keys: list[tuple[str, str]]  # (scope, key): what the key index finds it by (key_index.index_keys), from the raw properties
    store_ms: int


class ReplicatedGroups(NamedTuple):
    records: list[ReplicatedRecord]
    group_ends: list[int]  # where each whole group ends in the fetched bytes, in order (the last: where the whole ones end)


def whole_groups(view: memoryview, start: int) -> ReplicatedGroups:
    """Every whole write group at the front of ``view`` (the log from offset ``start``); a trailing partial one is left out.

    Each record must be intact (magic, sizes, CRC) and name its own log offset
    (``start`` plus its position: a follower's log has the leader's offsets), or
    ReplicationMismatch: the follower must resynchronise, and nothing is taken.
    """
    records: list[ReplicatedRecord] = []
    group_ends: list[int] = []
    topics: dict[bytes, str] = {}
    taken = 0  # records of whole groups
    at = 0
    length = len(view)
    while at + HEADER_SIZE <= length:
        (size, crc, magic, flags, queue_id, queue_offset, offset, _, store_ms, topic_len, props_len) = HEADER.unpack_from(view, at)
        if size < HEADER_SIZE or at + size > length:
            break  # the rest of the group comes with the next fetch
        if magic != MAGIC or size < HEADER_SIZE + topic_len + props_len or size > MAX_RECORD_SIZE:
            raise ReplicationMismatch(f"replicated record at {start + at} is damaged: bad header")
        if crc32c.crc32c(view[at + 8 : at + size]) != crc:
            raise ReplicationMismatch(f"replicated record at {start + at} is damaged: crc mismatch")
        if offset != start + at:
            raise ReplicationMismatch(f"a replicated record names offset {offset} but lands at {start + at}"
                                      " (do both nodes use the same segment size?)")
        topic_at = at + HEADER_SIZE
        raw_topic = bytes(view[topic_at : topic_at + topic_len])
        topic = topics.get(raw_topic)
        if topic is None:
            topic = topics[raw_topic] = raw_topic.decode()
        props = view[topic_at + topic_len : topic_at + topic_len + props_len]
        properties = decode_properties(props) if topic in _DECODED else None
        code = _tag_hash(props) if properties is None else queue_code(topic, queue_id, properties, properties.get("TAGS"))
        keys = raw_index_keys(topic, bytes(props)) if properties is None else index_keys(topic, properties)
        records.append(ReplicatedRecord(at, size, topic, queue_id, queue_offset, code, properties, keys, store_ms))
        at += size
        if not flags & FLAG_GROUP_MORE:  # the group's last record
            group_ends.append(at)
            taken = len(records)
    del records[taken:]
    return ReplicatedGroups(records, group_ends)


def _tag_hash(props: memoryview) -> int:
    """``record.tag_hash`` of the TAGS property, read from the encoded properties (the last TAGS, as a dict keeps)."""
    if not props:
        return 0
    raw = bytes(props)
    found = raw.rfind(_TAGS_AFTER)
    if found >= 0:
        begin = found + len(_TAGS_AFTER)
    elif raw.startswith(_TAGS):
        begin = len(_TAGS)
    else:
        return 0
    end = raw.find(_END, begin)
    tag = raw[begin:] if end < 0 else raw[begin:end]
    return (crc32c.crc32c(tag) or 1) if tag else 0
