"""Kafka's length-prefixed frames over an asyncio stream, and the bound on their size checked before the body."""

from __future__ import annotations

import asyncio
import struct

import pytest

from halfmq.broker.kafka_front.framing import MAX_FRAME_BYTES, FrameRefused, frame, read_frame


def stream(*chunks: bytes, eof: bool = True) -> asyncio.StreamReader:
    reader = asyncio.StreamReader()
    for chunk in chunks:
        reader.feed_data(chunk)
    if eof:
        reader.feed_eof()
    return reader


async def test_a_frame_is_read_whole_and_the_next_one_after_it() -> None:
    reader = stream(frame(b"first") + frame(b"second"))
    assert await read_frame(reader) == b"first"
    assert await read_frame(reader) == b"second"


async def test_a_frame_arriving_in_pieces_is_read_once_all_of_it_came() -> None:
    reader = asyncio.StreamReader()
    reading = asyncio.ensure_future(read_frame(reader))
    for piece in (b"\x00\x00", b"\x00\x05ab", b"cde"):
        await asyncio.sleep(0)
        assert not reading.done()
        reader.feed_data(piece)
    assert await reading == b"abcde"


async def test_a_client_closing_between_frames_ends_the_stream_quietly() -> None:
    assert await read_frame(stream(b"")) is None


async def test_a_stream_ending_inside_a_frame_is_an_incomplete_read() -> None:
    with pytest.raises(asyncio.IncompleteReadError):
        await read_frame(stream(struct.pack(">i", 10) + b"short"))
    with pytest.raises(asyncio.IncompleteReadError):
        await read_frame(stream(b"\x00\x00"))


async def test_an_empty_frame_is_a_frame() -> None:
    assert await read_frame(stream(frame(b""))) == b""


async def test_a_frame_over_the_bound_is_refused_from_its_size_before_a_byte_of_it_is_read() -> None:
    # only the size is fed and the stream stays open: reading the body would wait forever instead of refusing
    reader = stream(struct.pack(">i", MAX_FRAME_BYTES + 1), eof=False)
    with pytest.raises(FrameRefused) as refused:
        await asyncio.wait_for(read_frame(reader), timeout=5)
    assert refused.value.size == MAX_FRAME_BYTES + 1 and refused.value.limit == MAX_FRAME_BYTES


async def test_a_frame_of_exactly_the_bound_is_read() -> None:
    assert await read_frame(stream(frame(b"x" * 64)), max_frame_bytes=64) == b"x" * 64
    with pytest.raises(FrameRefused):
        await read_frame(stream(frame(b"x" * 65)), max_frame_bytes=64)


async def test_a_negative_size_is_refused() -> None:
    with pytest.raises(FrameRefused):
        await read_frame(stream(struct.pack(">i", -1), eof=False))


def test_a_frame_is_its_size_big_endian_then_its_bytes() -> None:
    assert frame(b"abc") == b"\x00\x00\x00\x03abc"
    assert frame(bytearray(300))[:4] == b"\x00\x00\x01\x2c"
