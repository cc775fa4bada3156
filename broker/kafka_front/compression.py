"""The codecs of compressed record batches, inflated within a bound in bytes.

kafka-python's ``kafka.codec`` inflates a batch whole: a 32 MiB frame of zstd can claim gigabytes. Here the same
libraries stop at the bound + 1 byte (gzip and lz4 by ``max_length``, zstd by a bounded stream read) or refuse before
inflating anything (snappy, whose blocks declare their inflated size first), so the work done for a batch is bounded
by the bound, not by what the client claims.
"""

from __future__ import annotations

import io
import struct
import zlib
from enum import IntEnum

import cramjam
import lz4.frame
import snappy
import zstandard
from kafka.codec import _detect_xerial_stream, snappy_decode
from kafka.record.default_records import DefaultRecordBatch

from .errors import BatchTooLarge, CorruptRecords, UnsupportedCompression

XERIAL_HEADER_BYTES = 16
XERIAL_BLOCK_SIZE = struct.Struct(">i")
CODEC_ERRORS = (zlib.error, RuntimeError, ValueError, struct.error, zstandard.ZstdError, cramjam.DecompressionError,
                snappy.UncompressError)
"""What the codec libraries raise on bytes that are not what they claim (lz4's frames raise RuntimeError)."""


class Compression(IntEnum):
    """The codec in a batch's attributes (bits 0-2)."""

    NONE = DefaultRecordBatch.CODEC_NONE
    GZIP = DefaultRecordBatch.CODEC_GZIP
    SNAPPY = DefaultRecordBatch.CODEC_SNAPPY
    LZ4 = DefaultRecordBatch.CODEC_LZ4
    ZSTD = DefaultRecordBatch.CODEC_ZSTD


def inflate(compression: Compression, data: memoryview, limit: int) -> bytes:
    """``data`` decompressed, refused with BatchTooLarge as soon as it passes ``limit`` bytes."""
    try:
        match compression:
            case Compression.GZIP:
                out = inflate_gzip(data, limit)
            case Compression.SNAPPY:
                out = inflate_snappy(data, limit)
            case Compression.LZ4:
                out = inflate_lz4(data, limit)
            case Compression.ZSTD:
                out = inflate_zstd(data, limit)
            case _:
                raise UnsupportedCompression(f"compression {compression}")
    except CODEC_ERRORS as exc:
        raise CorruptRecords(f"{compression.name.lower()} records do not decompress: {exc}") from exc
    if len(out) > limit:
        raise BatchTooLarge(f"a batch's records inflate past {limit} bytes")
    return out


def inflate_gzip(data: memoryview, limit: int) -> bytes:
    out = bytearray()
    rest = bytes(data)
    while rest:  # a gzip stream may hold several members
        member = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        out += member.decompress(rest, limit + 1 - len(out))
        if len(out) > limit:
            break
        if not member.eof:
            raise CorruptRecords("gzip records end inside a member")
        rest = member.unused_data
    return bytes(out)


def inflate_snappy(data: memoryview, limit: int) -> bytes:
    """Kafka's Java clients frame snappy the xerial way (a header, then size-prefixed raw blocks); librdkafka and
    kafka-python may write one raw block. Every raw block declares its inflated size first."""
    blocks = xerial_blocks(data) if _detect_xerial_stream(data) else [data]
    total = sum(int(cramjam.snappy.decompress_raw_len(bytes(block))) for block in blocks)
    if total > limit:
        raise BatchTooLarge(f"snappy records declare {total} bytes, past {limit}")
    return bytes(snappy_decode(bytes(data)))


def xerial_blocks(data: memoryview) -> list[memoryview]:
    blocks, at = [], XERIAL_HEADER_BYTES
    while at < len(data):
        (size,) = XERIAL_BLOCK_SIZE.unpack_from(data, at)
        if size < 0 or at + XERIAL_BLOCK_SIZE.size + size > len(data):
            raise CorruptRecords("a snappy block runs past the records")
        blocks.append(data[at + XERIAL_BLOCK_SIZE.size:at + XERIAL_BLOCK_SIZE.size + size])
        at += XERIAL_BLOCK_SIZE.size + size
    return blocks


def inflate_lz4(data: memoryview, limit: int) -> bytes:
    frame = lz4.frame.LZ4FrameDecompressor()
    out = frame.decompress(bytes(data), max_length=limit + 1)
    if len(out) <= limit and not frame.eof:
        raise CorruptRecords("lz4 records end inside their frame")
    return bytes(out)


def inflate_zstd(data: memoryview, limit: int) -> bytes:
    out = bytearray()
    with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(bytes(data)), read_across_frames=True) as reader:
        while len(out) <= limit and (chunk := reader.read(limit + 1 - len(out))):
            out += chunk
    return bytes(out)
