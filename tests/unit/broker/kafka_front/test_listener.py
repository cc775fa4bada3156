"""The Kafka listener on a real socket: a request waiting for its flush does not hold the next one back, answers go
out in the order their requests came, and at most ``max_pending`` answers wait before the reader waits too."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import AsyncIterator

import pytest

from halfmq.broker.kafka_front.dispatch import PendingAnswer
from halfmq.broker.kafka_front.framing import frame
from halfmq.broker.kafka_front.listener import KafkaListener


class FakeDispatcher:
    """``slow-N`` is answered once ``flushed`` is set (a Produce's flush), anything else at once."""

    def __init__(self) -> None:
        self.begun: list[bytes] = []
        self.flushed = asyncio.Event()
        self.more = asyncio.Condition()

    async def begin(self, payload: bytes) -> bytes | PendingAnswer:
        self.begun.append(payload)
        async with self.more:
            self.more.notify_all()
        if payload.startswith(b"slow"):
            return PendingAnswer(self.after_flush(payload))
        return frame(b"answer " + payload)

    async def after_flush(self, payload: bytes) -> bytes:
        await self.flushed.wait()
        return frame(b"answer " + payload)


@pytest.fixture
async def served() -> AsyncIterator[tuple[FakeDispatcher, asyncio.StreamReader, asyncio.StreamWriter]]:
    dispatcher = FakeDispatcher()
    listener = KafkaListener(dispatcher, max_pending=3)  # type: ignore[arg-type]
    port = await listener.start("127.0.0.1", 0)
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        yield dispatcher, reader, writer
    finally:
        dispatcher.flushed.set()
        writer.close()
        await listener.stop()


async def answer_of(reader: asyncio.StreamReader) -> bytes:
    size = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), 30))[0]
    return await reader.readexactly(size)


async def begun(dispatcher: FakeDispatcher, count: int) -> list[bytes]:
    async def enough() -> None:
        async with dispatcher.more:
            await dispatcher.more.wait_for(lambda: len(dispatcher.begun) >= count)
    await asyncio.wait_for(enough(), 30)
    return dispatcher.begun


async def test_a_request_waiting_for_its_flush_does_not_hold_the_next_back_and_answers_keep_their_order(
        served: tuple[FakeDispatcher, asyncio.StreamReader, asyncio.StreamWriter]) -> None:
    dispatcher, reader, writer = served
    writer.write(frame(b"slow-1") + frame(b"fast-2"))
    assert await begun(dispatcher, 2) == [b"slow-1", b"fast-2"]  # the second begun while the first waits
    dispatcher.flushed.set()
    assert [await answer_of(reader), await answer_of(reader)] == [b"answer slow-1", b"answer fast-2"]


async def test_past_max_pending_waiting_answers_the_next_request_is_not_read_until_one_is_written(
        served: tuple[FakeDispatcher, asyncio.StreamReader, asyncio.StreamWriter]) -> None:
    dispatcher, reader, writer = served
    writer.write(b"".join(frame(b"slow-%d" % i) for i in range(6)))
    await begun(dispatcher, 5)
    for _ in range(50):  # the sixth frame is in the reader's buffer already: turns enough to read it, were there room
        await asyncio.sleep(0)
    assert len(dispatcher.begun) == 5  # one in the writer's hands, three queued, one waiting for room: the sixth unread
    dispatcher.flushed.set()
    assert [await answer_of(reader) for _ in range(6)] == [b"answer slow-%d" % i for i in range(6)]
