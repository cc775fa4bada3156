"""Binary commit-log record: length-prefixed, CRC32C-protected.

Layout (little-endian)::

    total_size u32 | crc32c u32 | magic u8 | flags u16 | queue_id u32
    queue_offset i64 | commit_log_offset i64 | born_ts i64 | store_ts i64
    topic_len u16 | props_len u32 | topic | props (orjson map) | body

The CRC covers everything after itself, so a torn write or a flipped bit
anywhere in the record is caught. ``FLAG_GROUP_MORE`` marks every record of an
atomic write group except the last; recovery keeps a group only when its last
record is intact.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

import crc32c
import orjson

HEADER = struct.Struct("<IIBHIqqqqHI")
HEADER_SIZE = HEADER.size
MAGIC = 0xA7

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


@dataclass(slots=True)
class PendingRecord:
    """A record whose variable parts are encoded but whose offsets are not yet known."""

    topic: str
    queue_id: int
    born_timestamp: int
    properties: dict[str, str]
    body: bytes
    flags: int = 0
    topic_bytes: bytes = field(default=b"", repr=False)
    props_bytes: bytes = field(default=b"", repr=False)

    def __post_init__(self) -> None:
        self.topic_bytes = self.topic.encode()
        self.props_bytes = orjson.dumps(self.properties) if self.properties else b""

    @property
    def size(self) -> int:
        return HEADER_SIZE + len(self.topic_bytes) + len(self.props_bytes) + len(self.body)


def encode(record: PendingRecord, *, queue_offset: int, commit_log_offset: int, store_timestamp: int, flags: int) -> bytes:
    size = record.size
    header = HEADER.pack(
        size, 0, MAGIC, flags, record.queue_id, queue_offset, commit_log_offset,
        record.born_timestamp, store_timestamp, len(record.topic_bytes), len(record.props_bytes),
    )
    rest = header[8:] + record.topic_bytes + record.props_bytes + record.body
    return struct.pack("<II", size, crc32c.crc32c(rest)) + rest


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
    props = orjson.loads(view[start : start + props_len]) if props_len else {}
    start += props_len
    body = bytes(view[start:])
    return StoredMessage(topic, queue_id, queue_offset, clog_offset, born, stored, props, body, flags, size)


def tag_hash(tag: str | None) -> int:
    """Stable 63-bit hash of a tag for consume-queue filtering (0 = no tag)."""
    if not tag:
        return 0
    return crc32c.crc32c(tag.encode()) or 1
