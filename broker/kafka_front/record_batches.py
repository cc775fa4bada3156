"""Record batches v2 (Kafka's message format since 0.11) in and out: kafka-python's ``kafka.record`` does the format.

In: ``decode_batches`` cuts a Produce partition's records into batches, checks each batch's CRC, refuses the
message formats v0/v1 (Kafka 4's clients write v2 only), inflates a compressed batch within a bound in bytes
(compression.py) and has kafka-python read the records.

Out: ``encode_batch`` writes records at a base offset with any codec, ``encode_control_batch`` a transaction's
commit or abort marker (the control bit is the one attribute kafka-python's client-side builder never sets, and the
marker's value, version and coordinator epoch, is Kafka's EndTransactionMarker: two integers).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

from kafka.errors import CorruptRecordError
from kafka.record.default_records import ControlRecord, DefaultRecordBatch, DefaultRecordBatchBuilder

from .compression import Compression, inflate
from .errors import CorruptRecords, UnsupportedCompression, UnsupportedMessageFormat

MAX_BATCH_RECORDS_BYTES = 32 * 1024 * 1024
"""The most bytes one batch's records may take once inflated; a batch that inflates past it is refused
(MESSAGE_TOO_LARGE) before the rest is inflated. As large as the largest frame (framing.MAX_FRAME_BYTES), so a batch
the front could take uncompressed it also takes compressed. A setting later, beside the frame bound."""

MAGIC = 2
HEADER = DefaultRecordBatch.HEADER_STRUCT
ATTRIBUTES = struct.Struct(">h")
BASE_OFFSET = struct.Struct(">q")
LOG_OVERHEAD = struct.Struct(">qi")  # base offset, then the length of the rest: how every message format begins
PARTITION_LEADER_EPOCH_AT = struct.calcsize(">qi")
MAGIC_AT = struct.calcsize(">qii")
CODEC_MASK = DefaultRecordBatch.CODEC_MASK
CONTROL = DefaultRecordBatch.CONTROL_MASK
END_TXN_MARKER = struct.Struct(">hi")  # Kafka's EndTransactionMarker value: version (0), coordinator epoch
CONTROL_KEY = ControlRecord.KEY_STRUCT  # version (0), type (0 abort, 1 commit)


@dataclass(frozen=True, slots=True)
class Record:
    offset: int
    timestamp: int
    """Milliseconds since the epoch."""
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


@dataclass(frozen=True, slots=True)
class ControlMarker:
    """A control batch's one record: a transaction of ``producer_id`` ended, committed or aborted."""

    commit: bool
    coordinator_epoch: int


@dataclass(frozen=True, slots=True)
class RecordBatch:
    base_offset: int
    partition_leader_epoch: int
    compression: Compression
    transactional: bool
    control: bool
    producer_id: int
    producer_epoch: int
    base_sequence: int
    first_timestamp: int
    max_timestamp: int
    records: tuple[Record, ...]
    marker: ControlMarker | None = None

    @property
    def last_offset(self) -> int:
        return self.records[-1].offset if self.records else self.base_offset


def decode_batches(data: bytes, max_records_bytes: int = MAX_BATCH_RECORDS_BYTES) -> list[RecordBatch]:
    """Every batch in ``data`` (a Produce partition's records), read whole: the bytes must be batches end to end."""
    return [decode_batch(piece, max_records_bytes) for piece in batch_slices(data)]


def batch_slices(data: bytes) -> list[memoryview]:
    """``data`` cut at each batch's declared length. Every message format starts with an offset and a length and
    keeps its magic at byte 16, so formats v0/v1 are recognised (and refused) before their length is trusted."""
    view, at, pieces = memoryview(data), 0, []
    while at < len(view):
        if len(view) - at <= MAGIC_AT:
            raise CorruptRecords(f"{len(view) - at} bytes after the last whole record batch")
        magic = view[at + MAGIC_AT]
        if magic < MAGIC:
            raise UnsupportedMessageFormat(f"message format v{magic}: only record batches v2 are taken")
        _, length = LOG_OVERHEAD.unpack_from(view, at)
        end = at + LOG_OVERHEAD.size + length
        if length < HEADER.size - LOG_OVERHEAD.size or end > len(view):
            raise CorruptRecords(f"a record batch declares {length} bytes, {len(view) - at - LOG_OVERHEAD.size} follow")
        pieces.append(view[at:end])
        at = end
    return pieces


def decode_batch(piece: memoryview, max_records_bytes: int) -> RecordBatch:
    batch = DefaultRecordBatch(piece)
    if batch.magic != MAGIC:
        raise CorruptRecords(f"record batch magic {batch.magic}")
    if not batch.validate_crc():
        raise CorruptRecords("record batch CRC mismatch")
    compression = codec_of(batch.compression_type)
    readable = batch if compression is Compression.NONE else inflated(piece, batch.attributes, compression, max_records_bytes)
    try:
        read = list(readable)
    except (CorruptRecordError, UnicodeDecodeError) as exc:
        raise CorruptRecords(str(exc)) from exc
    return RecordBatch(
        base_offset=batch.base_offset, partition_leader_epoch=batch.leader_epoch, compression=compression,
        transactional=batch.is_transactional, control=batch.is_control_batch, producer_id=batch.producer_id,
        producer_epoch=batch.producer_epoch, base_sequence=batch.base_sequence, first_timestamp=batch.first_timestamp,
        max_timestamp=batch.max_timestamp,
        records=tuple(Record(r.offset, r.timestamp, r.key, r.value, tuple(r.headers)) for r in read),
        marker=control_marker(read) if batch.is_control_batch else None)


def codec_of(bits: int) -> Compression:
    try:
        return Compression(bits)
    except ValueError:
        raise UnsupportedCompression(f"compression codec {bits}") from None


def inflated(piece: memoryview, attributes: int, compression: Compression, limit: int) -> DefaultRecordBatch:
    """The same batch with its records inflated (within ``limit`` bytes) and its codec bits cleared, for
    kafka-python to read as an uncompressed batch. The CRC, already checked, covers the compressed bytes."""
    header = bytearray(piece[:HEADER.size])
    ATTRIBUTES.pack_into(header, DefaultRecordBatch.ATTRIBUTES_OFFSET, attributes & ~CODEC_MASK)
    return DefaultRecordBatch(bytes(header) + inflate(compression, piece[HEADER.size:], limit))


def control_marker(records: Sequence[object]) -> ControlMarker:
    if len(records) != 1 or not isinstance(records[0], ControlRecord):
        raise CorruptRecords(f"a control batch holds {len(records)} records, not one marker")
    marker = records[0]
    value = marker.value or b""
    if len(value) < END_TXN_MARKER.size:
        raise CorruptRecords("a control record without its coordinator epoch")
    _, coordinator_epoch = END_TXN_MARKER.unpack_from(value)
    return ControlMarker(commit=bool(marker.commit), coordinator_epoch=coordinator_epoch)


def encode_batch(records: Sequence[Record], *, compression: Compression = Compression.NONE, producer_id: int = -1,
                 producer_epoch: int = -1, base_sequence: int = -1, transactional: bool = False,
                 partition_leader_epoch: int = 0) -> bytes:
    """One batch of ``records`` (offsets ascending, the first is the base offset), compressed with ``compression``
    (kafka-python keeps it uncompressed when compressing saves nothing, as Kafka's clients do)."""
    if not records:
        raise ValueError("a record batch holds at least one record")
    builder = DefaultRecordBatchBuilder(magic=MAGIC, compression_type=int(compression), is_transactional=transactional,
                                        producer_id=producer_id, producer_epoch=producer_epoch,
                                        base_sequence=base_sequence, batch_size=1 << 62)
    return built(builder, records, partition_leader_epoch)


class ControlBatchBuilder(DefaultRecordBatchBuilder):
    """kafka-python's builder with the control bit set: a broker writes control batches, its clients never do."""

    def _get_attributes(self, include_compression_type: bool = True) -> int:
        return int(super()._get_attributes(include_compression_type)) | CONTROL


def encode_control_batch(offset: int, *, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
                         timestamp: int, partition_leader_epoch: int = 0) -> bytes:
    """The marker a transaction's end writes into each partition it touched: transactional, control, one record
    whose key says commit or abort and whose value carries the coordinator's epoch; no sequence (-1)."""
    builder = ControlBatchBuilder(magic=MAGIC, compression_type=int(Compression.NONE), is_transactional=True,
                                  producer_id=producer_id, producer_epoch=producer_epoch, base_sequence=-1,
                                  batch_size=1 << 62)
    marker = Record(offset, timestamp, CONTROL_KEY.pack(0, 1 if commit else 0), END_TXN_MARKER.pack(0, coordinator_epoch))
    return built(builder, [marker], partition_leader_epoch)


def built(builder: DefaultRecordBatchBuilder, records: Sequence[Record], partition_leader_epoch: int) -> bytes:
    base = last = records[0].offset
    for at, record in enumerate(records):
        if at and record.offset <= last:
            raise ValueError(f"record offset {record.offset} after {last}: a batch's offsets ascend")
        last = record.offset
        builder.append(record.offset - base, timestamp=record.timestamp, key=record.key, value=record.value,
                       headers=list(record.headers))
    raw = builder.build()
    # The base offset and the partition leader epoch sit before the CRC's span: the broker sets them, as here.
    BASE_OFFSET.pack_into(raw, 0, base)
    struct.pack_into(">i", raw, PARTITION_LEADER_EPOCH_AT, partition_leader_epoch)
    return bytes(raw)
