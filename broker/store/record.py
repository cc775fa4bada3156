"""Binary commit-log record: length-prefixed, CRC32C-protected.

Layout (little-endian)::

    total_size u32 | crc32c u32 | magic u8 | flags u16 | queue_id u32
    queue_offset i64 | commit_log_offset i64 | born_ts i64 | store_ts i64
    topic_len u16 | props_len u32 | topic | props | body

Properties use RocketMQ's encoding: ``name \x01 value \x02`` repeated (UTF-8);
the two separators may not appear in names or values.

The CRC covers everything after itself, so a torn write or a flipped bit
anywhere in the record is caught. ``FLAG_GROUP_MORE`` marks every record of an
atomic write group except the last; recovery keeps a group only when its last
record is intact.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import crc32c

from .topics import TIMER_OUT_MS, TIMER_QUEUE, TIMER_TOPIC

HEADER = struct.Struct("<IIBHIqqqqHI")
HEADER_SIZE = HEADER.size
MAGIC = 0xA7

_HEADER_NAMES = ("size", "crc", "magic", "flags", "queue_id", "queue_offset", "commit_log_offset", "born_timestamp",
                 "store_timestamp", "topic_len", "props_len")
HEADER_FIELDS = {name: struct.calcsize("<" + HEADER.format[1:i + 1]) for i, name in enumerate(_HEADER_NAMES)}  # name -> start
MAGIC_AT = HEADER_FIELDS["magic"]
COMMIT_LOG_OFFSET_AT = HEADER_FIELDS["commit_log_offset"]
_OFFSET_FIELD = struct.Struct("<q")
MAX_BIT_SEARCH = 4096  # records up to this size get the flipped bit located (8 CRCs a byte)

FLAG_GROUP_MORE = 1 << 0
FLAG_BODY_BINARY = 1 << 1

MAX_RECORD_SIZE = 64 * 1024 * 1024


class RecordError(Exception):
    """The bytes at an offset are not a valid record."""


@dataclass(slots=True)
class StoredMessage:
    topic: str
    queue_id: int
    queue_offset: int
    commit_log_offset: int
    born_timestamp: int
    store_timestamp: int
    properties: dict[str, str]
    body: bytes
    flags: int = 0
    size: int = 0

    @property
    def binary(self) -> bool:
        return bool(self.flags & FLAG_BODY_BINARY)

    @property
    def group_more(self) -> bool:
        return bool(self.flags & FLAG_GROUP_MORE)


NAME_VALUE_SEPARATOR = "\x01"
PROPERTY_SEPARATOR = "\x02"


def encode_properties(props: dict[str, str]) -> bytes:
    if not props:
        return b""
    if len(props) == 1:  # the common message: only its UNIQ_KEY
        for k, v in props.items():
            return f"{k}\x01{v}\x02".encode()
    return "".join(f"{k}\x01{v}\x02" for k, v in props.items()).encode()


def decode_properties(raw: bytes | memoryview) -> dict[str, str]:
    if not raw:
        return {}
    out = {}
    for pair in bytes(raw).decode().split(PROPERTY_SEPARATOR):
        if pair:
            k, _, v = pair.partition(NAME_VALUE_SEPARATOR)
            out[k] = v
    return out


def properties_size(props: dict[str, str]) -> int:
    """The bytes ``encode_properties(props)`` takes (UTF-8, a separator after each name and value), without joining them;
    UnicodeEncodeError for text that is no UTF-8 (a lone surrogate)."""
    return sum(len(k.encode()) + len(v.encode()) + 2 for k, v in props.items())


def record_size(topic: bytes, props: bytes, body: bytes) -> int:
    return HEADER_SIZE + len(topic) + len(props) + len(body)


def stored_size(topic: str, properties: dict[str, str], body: bytes) -> int:
    """The bytes a message will take as a record, from its fields, without encoding it: the one way the broker counts
    a message's size before it writes (segment fit, a transaction's held bytes, a send window's sizes)."""
    return HEADER_SIZE + len(topic.encode()) + properties_size(properties) + len(body)


def encode(topic: bytes, queue_id: int, props: bytes, body: bytes, *, queue_offset: int, commit_log_offset: int,
           born_timestamp: int, store_timestamp: int, flags: int) -> bytes:
    """One record; the caller knows every offset, so this is a pack and a CRC."""
    head, rest = encode_parts(topic, queue_id, props, body, queue_offset, commit_log_offset, born_timestamp, store_timestamp, flags)
    return head + rest


def encode_parts(topic: bytes, queue_id: int, props: bytes, body: bytes, queue_offset: int, commit_log_offset: int,
                 born_timestamp: int, store_timestamp: int, flags: int) -> tuple[bytes, bytes]:
    """A record as (size + CRC, everything the CRC covers): the writer joins many of them once."""
    rest = b"".join((_AFTER_CRC.pack(MAGIC, flags, queue_id, queue_offset, commit_log_offset, born_timestamp,
                                     store_timestamp, len(topic), len(props)), topic, props, body))
    return _SIZE_CRC.pack(8 + len(rest), crc32c.crc32c(rest)), rest


_SIZE_CRC = struct.Struct("<II")
_AFTER_CRC = struct.Struct("<BHIqqqqHI")  # HEADER without its first two fields
assert _SIZE_CRC.size + _AFTER_CRC.size == HEADER_SIZE


def peek_size(buf: bytes | memoryview, pos: int = 0) -> int:
    """The declared size of the record at ``pos`` (0 if fewer than 4 bytes remain)."""
    if len(buf) - pos < 4:
        return 0
    return struct.unpack_from("<I", buf, pos)[0]


def decode(buf: bytes | memoryview, pos: int = 0, *, verify: bool = True) -> StoredMessage:
    """Decode one record; raise RecordError when it is short, malformed or fails its CRC."""
    avail = len(buf) - pos
    if avail < HEADER_SIZE:
        raise RecordError(f"short header: {avail} bytes")
    (size, crc, magic, flags, queue_id, queue_offset, clog_offset, born, stored, topic_len, props_len) = HEADER.unpack_from(buf, pos)
    if magic != MAGIC:
        raise RecordError(f"bad magic {magic:#x}")
    if size < HEADER_SIZE + topic_len + props_len or size > MAX_RECORD_SIZE:
        raise RecordError(f"bad size {size}")
    if size > avail:
        raise RecordError(f"record of {size} bytes runs past the end ({avail} available)")
    view = memoryview(buf)[pos : pos + size]
    if verify and crc32c.crc32c(view[8:]) != crc:
        raise RecordError("crc mismatch")
    start = HEADER_SIZE
    topic = bytes(view[start : start + topic_len]).decode()
    start += topic_len
    props = decode_properties(view[start : start + props_len]) if props_len else {}
    start += props_len
    body = bytes(view[start:])
    return StoredMessage(topic, queue_id, queue_offset, clog_offset, born, stored, props, body, flags, size)


def claims_offset(buf: bytes | memoryview, pos: int, offset: int) -> bool:
    """Whether the bytes at ``pos`` start like a record written at commit-log ``offset``.

    A cheap filter before a CRC check when resynchronising after damage: the
    magic byte and the record's own offset field must both fit, so a body that
    merely contains record-like bytes (even a whole record copied from elsewhere)
    is not taken for a record.
    """
    return (len(buf) - pos >= HEADER_SIZE and buf[pos + MAGIC_AT] == MAGIC
            and _OFFSET_FIELD.unpack_from(buf, pos + COMMIT_LOG_OFFSET_AT)[0] == offset)


def damaged_field(raw: bytes, offset: int) -> str:
    """Best guess at which field of a damaged record was hit.

    ``raw`` runs from the record's start to where the next valid record starts,
    so a size that disagrees with it is the damage. Otherwise a single flipped
    bit is located by flipping each bit back until the CRC matches (small records
    only), and named by the field it falls in.
    """
    if len(raw) < HEADER_SIZE:
        return "size" if peek_size(raw) != len(raw) else "header"
    (size, crc, magic, _, _, _, clog_offset, _, _, topic_len, props_len) = HEADER.unpack_from(raw)
    if size != len(raw):
        return "size"
    if magic != MAGIC:
        return "magic"
    if (crc32c.crc32c(memoryview(raw)[8:]) ^ crc).bit_count() == 1:
        return "crc"
    bit = _flipped_bit(raw, crc)
    if bit is not None:
        fixed = bytearray(raw)
        fixed[bit // 8] ^= 1 << bit % 8
        return _field_at(bytes(fixed), bit // 8)
    if clog_offset != offset:
        return "commit_log_offset"
    return "contents (CRC mismatch)"


def _flipped_bit(raw: bytes, crc: int) -> int | None:
    if len(raw) > MAX_BIT_SEARCH:
        return None
    work = bytearray(raw)
    covered = memoryview(work)[8:]
    for i in range(8, len(work)):
        for b in range(8):
            work[i] ^= 1 << b
            if crc32c.crc32c(covered) == crc:
                return i * 8 + b
            work[i] ^= 1 << b
    return None


def _field_at(record: bytes, index: int) -> str:
    if index < HEADER_SIZE:
        return max((start, name) for name, start in HEADER_FIELDS.items() if start <= index)[1]
    topic_len, props_len = HEADER.unpack_from(record)[9:]
    if index < HEADER_SIZE + topic_len:
        return "topic"
    return "properties" if index < HEADER_SIZE + topic_len + props_len else "body"


def tag_hash(tag: str | None) -> int:
    """Stable 63-bit hash of a tag for consume-queue filtering (0 = no tag)."""
    if not tag:
        return 0
    return crc32c.crc32c(tag.encode()) or 1


def queue_code(topic: str, queue_id: int, properties: dict[str, str], tag: str | None) -> int:
    """A consume-queue entry's third field: the tag hash, or for a timer (RMQ_SYS_WHEEL_TIMER/0) its due time in ms.

    One function for every writer of entries (``put``, recovery's replay, a follower's append), so a recovered or
    replicated timer entry carries the same due time as the one written live; the timer index reads it without
    reading the log.
    """
    if queue_id == TIMER_QUEUE and topic == TIMER_TOPIC:
        return int(properties[TIMER_OUT_MS])
    return tag_hash(tag) if tag else 0
