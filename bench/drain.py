"""Drain a pre-filled topic: the one consume loop behind the ``consume`` and ``eos`` scenarios.

Both scenarios read a backlog written by ``bench.fill`` with a fresh consumer
group per measured run (a new group starts at the queue's minimum offset, so
every run sees the same backlog). They differ only in what a worker does with
each received batch: ack it (``consume``), or copy it and then ack it
(``eos``). So one loop does the receiving, the counting and the stopping, and
a scenario hands it the per-batch work as ``Settle``.

``drain_with_sdk`` measures the same drain through the SDK's ``AsyncConsumer``
(receive + handler + ack in the bench process), which is what a Python
service sees; it is the figure issue 18's consumer gate compares with NATS.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import orjson

from . import payloads
from .load import Run, StopLoad, drive, http_session, post

# What a worker does with one received batch: (session, worker, base URL of the group's
# topic, the messages) → done. Raising fails the op (counted as an error).
Settle = Callable[[aiohttp.ClientSession, int, str, list[dict[str, Any]]], Awaitable[None]]

_groups = itertools.count()


def group_name(prefix: str) -> str:
    """A consumer group no earlier run used (so it starts at the backlog's first offset)."""
    return f"{prefix}_{next(_groups)}"


async def ack_batch(session: aiohttp.ClientSession, _worker: int, base: str, messages: list[dict[str, Any]]) -> None:
    """The plain consumer's settle: one ack request for the whole batch."""
    await post(session, f"{base}/ack", payloads.ack([m["receipt_handle"] for m in messages]))


async def drain(broker_url: str, topic: str, *, group_prefix: str, workers: int, batch: int, backlog: int,
                seconds: float, max_ops: int, warmup: float, settle: Settle = ack_batch,
                requests_per_op: float = 2.0) -> Run:
    """``workers`` loops of "receive ``batch`` (no long poll) → ``settle``" until the deadline or the backlog is done.

    A worker's latency is one such round. A warm-up, if any, drains with its
    own group first and is discarded.
    """
    receive_body = payloads.receive(batch, invisible_seconds=60.0, wait_seconds=0.0)

    async def one_run(secs: float) -> Run:
        base = f"{broker_url}/v1/consumer-groups/{group_name(group_prefix)}/topics/{topic}"
        done = 0

        async with http_session(workers) as session:
            def op_for(worker: int) -> Callable[[], Awaitable[int]]:
                async def op() -> int:
                    nonlocal done
                    if done >= backlog:
                        raise StopLoad
                    messages = orjson.loads(await post(session, f"{base}/receive", receive_body))["messages"]
                    if not messages:
                        return 0
                    await settle(session, worker, base, messages)
                    done += len(messages)
                    return len(messages)
                return op

            return await drive(op_for, workers, secs, max_ops, requests_per_op=requests_per_op)

    if warmup > 0:
        await one_run(warmup)
    return await one_run(seconds)


async def drain_with_sdk(broker_url: str, topic: str, *, group_prefix: str, batch: int, backlog: int,
                         seconds: float, max_ops: int, warmup: float) -> Run:
    """One ``AsyncConsumer`` with a trivial async handler drains the backlog; messages handled per second.

    The run ends when the handler has seen the whole backlog (or ``max_ops``
    messages) or at the deadline; the clock stops when ``run()`` returns, so
    the last batch's ack is inside it. No per-message latency: the figure is
    the consumer's throughput.
    """
    from halfmq.client import AsyncConsumer  # the SDK: imported only when this case runs

    async def one_run(secs: float) -> Run:
        handled = 0
        limit = min(backlog, max_ops)
        consumer: AsyncConsumer | None = None

        async def handler(_message: Any) -> None:
            nonlocal handled
            handled += 1
            if handled >= limit and consumer is not None:
                consumer.stop()

        consumer = AsyncConsumer(broker_url, group_name(group_prefix), topic, handler, max_messages=batch,
                                 invisible_seconds=60.0, wait_seconds=1.0, concurrency=batch)
        async with consumer:
            started = time.perf_counter()
            deadline = asyncio.get_running_loop().call_later(secs, consumer.stop)
            try:
                await consumer.run()
            finally:
                deadline.cancel()
            elapsed = time.perf_counter() - started
        return Run(handled, handled, 0, 0, elapsed, None, None, "halfmq AsyncConsumer")

    if warmup > 0:
        await one_run(warmup)
    return await one_run(seconds)
