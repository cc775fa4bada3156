"""The capped body reader, fed ASGI messages as a server would send them."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from halfmq.asgi_body import BodyReader, ClientGone, declared_length, read_body
from halfmq.errors import RequestBodyTimeout, RequestTooLarge
from tests.support.asgi_messages import chunks


async def test_a_body_within_the_cap_is_joined() -> None:
    assert await read_body(chunks(b"ab", b"cd", b"e"), limit=5) == b"abcde"


async def test_a_body_is_refused_at_the_first_chunk_past_the_cap_without_reading_further() -> None:
    receive = chunks(b"abc", b"def", b"ghi", b"jkl")
    with pytest.raises(RequestTooLarge) as refused:
        await read_body(receive, limit=5)
    assert len(receive.read) == 2
    assert (refused.value.status, refused.value.extra) == (413, {"limit": 5})


async def test_a_client_hanging_up_mid_body_is_client_gone() -> None:
    with pytest.raises(ClientGone):
        await read_body(chunks(b"abc", hang_up=True), limit=100)


def test_the_declared_length_is_read_from_the_headers() -> None:
    assert declared_length({"headers": [(b"host", b"x"), (b"content-length", b"123")]}) == 123
    assert declared_length({"headers": [(b"host", b"x")]}) is None
    assert declared_length({"headers": [(b"content-length", b"lots")]}) is None


async def stalled() -> dict[str, Any]:
    await asyncio.Event().wait()
    raise AssertionError("unreachable")


async def test_a_body_not_all_there_by_the_deadline_is_refused_and_the_task_carries_on() -> None:
    reader = BodyReader(limit=100, timeout=0.2, sweep_every=0.05)
    started = time.monotonic()
    with pytest.raises(RequestBodyTimeout):
        await reader.read(stalled)
    assert 0.2 <= time.monotonic() - started < 1
    assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]
    assert await reader.read(chunks(b"in ", b"time")) == b"in time"


async def test_a_read_cancelled_by_someone_else_stays_cancelled() -> None:
    reader = BodyReader(limit=100, timeout=30)
    asked = asyncio.Event()

    async def stalled_once_asked() -> dict[str, Any]:
        asked.set()
        return await stalled()

    read = asyncio.ensure_future(reader.read(stalled_once_asked))
    await asked.wait()  # the read waits for its body
    read.cancel()
    with pytest.raises(asyncio.CancelledError):
        await read
