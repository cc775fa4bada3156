"""Record batches v2 in and out: every codec, control markers, what clients write, and what the front refuses."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords
from kafka.record.util import calc_crc32c

from halfmq.broker.kafka_front.compression import Compression
from halfmq.broker.kafka_front.errors import BatchTooLarge, CorruptRecords, KafkaRefusal, UnsupportedCompression, UnsupportedMessageFormat
from halfmq.broker.kafka_front.record_batches import Record, decode_batches, encode_batch, encode_control_batch

T0 = 1_764_000_000_123
HEADER_BYTES = 61  # a batch's fixed header, up to and including its record count


def codec_name(compression: Compression) -> str:
    return compression.name.lower()


RECORDS = [Record(1_000 + i, T0 + i, f"key-{i}".encode() if i % 3 else None, (b"value-%d " % i) * 20 if i % 5 else None,
                  (("trace", b"t-%d" % i), ("empty", None)) if i % 2 else ())
           for i in range(100)]


@pytest.mark.parametrize("compression", list(Compression), ids=codec_name)
def test_a_batch_round_trips_with_every_codec(compression: Compression) -> None:
    data = encode_batch(RECORDS, compression=compression, partition_leader_epoch=4)
    [batch] = decode_batches(data)
    assert batch.records == tuple(RECORDS)
    assert batch.compression is compression
    assert (batch.base_offset, batch.last_offset, batch.partition_leader_epoch) == (1_000, 1_099, 4)
    assert (batch.first_timestamp, batch.max_timestamp) == (T0, T0 + 99)
    assert not batch.transactional and not batch.control and batch.marker is None


@pytest.mark.parametrize("compression", list(Compression), ids=codec_name)
def test_what_the_front_writes_kafka_pythons_client_reads(compression: Compression) -> None:
    [batch] = MemoryRecords(encode_batch(RECORDS, compression=compression))
    assert batch.validate_crc()
    assert [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in batch] == [
        (r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in RECORDS]


@pytest.mark.parametrize("compression", list(Compression), ids=codec_name)
def test_what_kafka_pythons_producer_writes_the_front_reads(compression: Compression) -> None:
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=int(compression), is_transactional=True, producer_id=77,
                                        producer_epoch=3, base_sequence=40, batch_size=1 << 20)
    for i in range(50):  # a producer writes offsets from 0; the broker assigns the base
        builder.append(i, timestamp=T0 + i, key=None, value=b"payload %d" % i * 10, headers=[("h", b"v")])
    [batch] = decode_batches(bytes(builder.build()))
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence, batch.transactional) == (77, 3, 40, True)
    assert [r.value for r in batch.records] == [b"payload %d" % i * 10 for i in range(50)]
    assert [r.offset for r in batch.records] == list(range(50))


def test_an_idempotent_transactional_batch_keeps_its_producer_and_sequence() -> None:
    data = encode_batch(RECORDS[:3], producer_id=9, producer_epoch=2, base_sequence=17, transactional=True)
    [batch] = decode_batches(data)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence, batch.transactional, batch.control) == (9, 2, 17, True, False)


@pytest.mark.parametrize("commit", [True, False], ids=["commit", "abort"])
def test_a_control_batch_carries_a_transactions_commit_or_abort_marker(commit: bool) -> None:
    data = encode_control_batch(5_000, producer_id=9, producer_epoch=2, commit=commit, coordinator_epoch=11, timestamp=T0)
    [batch] = decode_batches(data)
    assert batch.control and batch.transactional and (batch.producer_id, batch.producer_epoch) == (9, 2)
    assert batch.base_offset == 5_000 and batch.base_sequence == -1
    assert batch.marker is not None and (batch.marker.commit, batch.marker.coordinator_epoch) == (commit, 11)
    [client_view] = MemoryRecords(data)  # kafka-python's consumer sees a control record of the right type
    assert client_view.is_control_batch and [r.commit for r in client_view] == [commit]


def test_several_batches_back_to_back_are_all_read() -> None:
    data = encode_batch(RECORDS[:10]) + encode_control_batch(1_010, producer_id=1, producer_epoch=0, commit=True,
                                                             coordinator_epoch=0, timestamp=T0) + encode_batch(RECORDS[11:20])
    assert [(b.base_offset, b.control, len(b.records)) for b in decode_batches(data)] == [(1_000, False, 10), (1_010, True, 1), (1_011, False, 9)]


def test_a_batch_must_hold_a_record_and_its_offsets_must_ascend() -> None:
    with pytest.raises(ValueError):
        encode_batch([])
    for out_of_order in ([RECORDS[1], RECORDS[0]], [RECORDS[0], RECORDS[5], RECORDS[3]], [RECORDS[0], RECORDS[0]]):
        with pytest.raises(ValueError):
            encode_batch(out_of_order)


@pytest.mark.parametrize("magic", [0, 1])
def test_message_formats_v0_and_v1_are_refused(magic: int) -> None:
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=0, batch_size=1 << 20)
    builder.append(0, timestamp=T0 if magic else None, key=b"k", value=b"v")
    with pytest.raises(UnsupportedMessageFormat):
        decode_batches(bytes(builder.build()))


def test_a_batch_whose_bytes_were_changed_fails_its_crc() -> None:
    data = bytearray(encode_batch(RECORDS[:5]))
    data[-3] ^= 0xFF
    with pytest.raises(CorruptRecords, match="CRC"):
        decode_batches(bytes(data))


@pytest.mark.parametrize("cut", [1, 20, 70])
def test_a_cut_batch_or_bytes_after_the_last_batch_are_corrupt(cut: int) -> None:
    data = encode_batch(RECORDS[:5])
    with pytest.raises(CorruptRecords):
        decode_batches(data[:-cut])
    with pytest.raises(CorruptRecords):
        decode_batches(data + data[:cut])


def test_a_batch_claiming_more_records_than_it_holds_is_corrupt() -> None:
    data = bytearray(encode_batch(RECORDS[:5]))
    struct.pack_into(">i", data, 57, 6)  # the record count, then the CRC over attributes onward again
    struct.pack_into(">I", data, 17, calc_crc32c(memoryview(data)[21:]))
    with pytest.raises(CorruptRecords):
        decode_batches(bytes(data))


def test_a_codec_kafka_does_not_define_is_refused() -> None:
    data = bytearray(encode_batch(RECORDS[:5]))
    struct.pack_into(">h", data, 21, 5)  # codec 5
    struct.pack_into(">I", data, 17, calc_crc32c(memoryview(data)[21:]))
    with pytest.raises(UnsupportedCompression):
        decode_batches(bytes(data))


def test_a_compressed_batch_over_the_bound_is_refused_as_a_batch() -> None:
    data = encode_batch([Record(0, T0, None, bytes(100_000))], compression=Compression.ZSTD)
    assert len(decode_batches(data, max_records_bytes=200_000)[0].records) == 1
    with pytest.raises(BatchTooLarge):
        decode_batches(data, max_records_bytes=50_000)


@settings(max_examples=300, deadline=None)
@given(compression=st.sampled_from(list(Compression)), edits=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), max_size=8),
       cut=st.integers(0, 40))
def test_damaged_records_behind_a_good_crc_are_refused_never_raised(compression: Compression, edits: list[tuple[int, int]],
                                                                     cut: int) -> None:
    """A client can compute a CRC over anything: the records behind it are read defensively all the same."""
    data = bytearray(encode_batch(RECORDS[:20], compression=compression))
    body = data[HEADER_BYTES:len(data) - cut]
    for at, byte in edits:
        body[at % len(body)] = byte
    damaged = bytearray(data[:HEADER_BYTES]) + body
    struct.pack_into(">i", damaged, 8, len(damaged) - 12)
    struct.pack_into(">I", damaged, 17, calc_crc32c(memoryview(damaged)[21:]))
    try:
        decode_batches(bytes(damaged))
    except KafkaRefusal:
        pass


def test_random_bytes_are_refused_never_raised() -> None:
    @settings(max_examples=300, deadline=None)
    @given(st.binary(max_size=300))
    def check(data: bytes) -> None:
        try:
            decode_batches(data)
        except KafkaRefusal:
            pass

    check()
