"""Compressed records inflated within a bound: every codec, the bound pushed past, damaged and multi-part streams."""

from __future__ import annotations

import gzip
import tracemalloc

import lz4.frame
import pytest
import snappy
import zstandard
from kafka.codec import snappy_encode

from halfmq.broker.kafka_front.compression import Compression, inflate
from halfmq.broker.kafka_front.errors import BatchTooLarge, CorruptRecords


def codec_name(compression: Compression) -> str:
    return compression.name.lower()


@pytest.mark.parametrize("compression", [c for c in Compression if c is not Compression.NONE], ids=codec_name)
def test_records_that_do_not_decompress_are_corrupt(compression: Compression) -> None:
    with pytest.raises(CorruptRecords):
        inflate(compression, memoryview(b"\x1f\x8b\x08 this is not what it claims to be" * 3), 1 << 20)


COMPRESSED_MIB = {
    Compression.GZIP: lambda data: gzip.compress(data, compresslevel=1),
    Compression.SNAPPY: snappy_encode,  # the xerial framing Kafka's Java clients write
    Compression.LZ4: lz4.frame.compress,
    Compression.ZSTD: lambda data: zstandard.ZstdCompressor(level=1).compress(data),
}


@pytest.mark.parametrize("compression", list(COMPRESSED_MIB), ids=codec_name)
def test_records_inflating_past_the_bound_are_refused_before_they_are_inflated_whole(compression: Compression) -> None:
    bomb = COMPRESSED_MIB[compression](bytes(64 * 1024 * 1024))
    assert len(bomb) < 4 * 1024 * 1024
    tracemalloc.start()
    try:
        with pytest.raises(BatchTooLarge):
            inflate(compression, memoryview(bomb), 1024 * 1024)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 * 1024 * 1024, f"{peak} bytes held to refuse a 64 MiB inflation bounded at 1 MiB"


@pytest.mark.parametrize("compression", list(COMPRESSED_MIB), ids=codec_name)
def test_records_inflating_to_exactly_the_bound_are_taken(compression: Compression) -> None:
    assert inflate(compression, memoryview(COMPRESSED_MIB[compression](b"z" * 4096)), 4096) == b"z" * 4096
    with pytest.raises(BatchTooLarge):
        inflate(compression, memoryview(COMPRESSED_MIB[compression](b"z" * 4097)), 4096)


def test_snappy_as_one_raw_block_is_read_too() -> None:
    """librdkafka writes Kafka's snappy as one raw block, not in the xerial framing of the Java clients."""
    assert inflate(Compression.SNAPPY, memoryview(snappy.compress(b"raw " * 1000)), 1 << 20) == b"raw " * 1000
    with pytest.raises(BatchTooLarge):
        inflate(Compression.SNAPPY, memoryview(snappy.compress(b"raw " * 1000)), 3999)


def test_gzip_of_several_members_is_read_whole() -> None:
    assert inflate(Compression.GZIP, memoryview(gzip.compress(b"one ") + gzip.compress(b"two")), 1 << 20) == b"one two"
    with pytest.raises(CorruptRecords):
        inflate(Compression.GZIP, memoryview(gzip.compress(b"one " * 100)[:-12]), 1 << 20)
