"""Long polls on a topic: woken by a wake of that topic, by close, or by their own time."""

from __future__ import annotations

import asyncio

from halfmq.broker.delivery.arrivals import Arrivals


async def test_a_wake_of_its_topic_ends_a_wait_long_before_its_time() -> None:
    arrivals = Arrivals()
    waiting = asyncio.create_task(arrivals.wait("T", 3600))
    await asyncio.sleep(0)  # it waits now
    arrivals.wake("other topic")
    await asyncio.sleep(0)
    assert not waiting.done()
    arrivals.wake("T", 3)
    await asyncio.wait_for(waiting, 30)


async def test_a_wait_nobody_wakes_ends_at_its_time() -> None:
    await asyncio.wait_for(Arrivals().wait("T", 0), 30)


async def test_close_ends_every_wait_and_says_the_service_is_closing() -> None:
    arrivals = Arrivals()
    waits = [asyncio.create_task(arrivals.wait(topic, 3600)) for topic in ("T", "U")]
    await asyncio.sleep(0)
    arrivals.close()
    await asyncio.wait_for(asyncio.gather(*waits), 30)
    assert arrivals.closing


async def test_a_wait_on_several_topics_ends_at_a_wake_of_any_of_them() -> None:
    arrivals = Arrivals()
    waiting = asyncio.create_task(arrivals.wait_any(["T", "U"], 3600))
    await asyncio.sleep(0)
    arrivals.wake("other topic")
    await asyncio.sleep(0)
    assert not waiting.done()
    arrivals.wake("U", 0)
    await asyncio.wait_for(waiting, 30)


async def test_a_wake_before_the_wait_on_several_topics_first_yields_is_not_missed() -> None:
    arrivals = Arrivals()
    waiting = arrivals.wait_any(["T", "U"], 3600)
    started = asyncio.ensure_future(waiting)
    await asyncio.sleep(0)  # its events are taken at its first step
    arrivals.wake("T")
    await asyncio.wait_for(started, 30)


async def test_a_wait_on_several_topics_nobody_wakes_ends_at_its_time() -> None:
    await asyncio.wait_for(Arrivals().wait_any(["T", "U"], 0.01), 30)


async def test_a_wait_on_several_topics_once_closing_ends_at_once() -> None:
    arrivals = Arrivals()
    arrivals.close()
    await asyncio.wait_for(arrivals.wait_any(["T"], 3600), 30)
