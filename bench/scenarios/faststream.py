"""`faststream`: the FastStream broker (``faststream-halfmq``) against the SDK underneath it, publish and consume.

What a FastStream user pays for the framework: the same N messages (a small JSON object, default 20,000) on the same
topic shape (4 queues, each topic created by its first publish), published by ``concurrency`` tasks in flight and consumed by one subscriber handling
``concurrency`` at once, once through ``HalfmqBroker`` and once through the SDK's clients it is built on:

* ``publish_faststream``: ``await publisher.publish(body)`` on ``broker.publisher(topic)`` (FastStream's encoding,
  middlewares and publish command, then the SDK's ``AsyncProducer.send``);
* ``publish_sdk``: ``await AsyncProducer.send(topic, body)`` with the same dict body;
* ``consume_faststream``: a ``@broker.subscriber(topic, group=…, max_workers=concurrency)`` handler that decodes the
  body into a dict (FastStream parses, decodes, calls, acks), from ``broker.start()`` to the N-th message handled;
* ``consume_sdk``: the subscriber's loop written on ``AsyncSimpleConsumer`` directly (receive as many as there are
  idle workers, each message decoded with ``json.loads`` and acked), the same clock.

Both brokers are made with ``logger=None``: FastStream's two log lines per message would be measured otherwise (a
service under load logs at WARNING). Each round uses new topics, so every consume reads exactly the N messages its publish wrote, with a new group. The two
sides alternate (faststream, sdk, faststream, sdk, …; at least 2 rounds each) so a load drifting on a shared machine
weighs on both alike. The FastStream cases carry ``vs_sdk``: their median over the SDK's (1.0 = no overhead).

Reported as "unavailable" when ``faststream-halfmq`` is not installed (``bin/setup`` installs it).
"""

from __future__ import annotations

import asyncio
import importlib.util
import itertools
import json
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

from ..context import Context
from ..load import Run, percentile, run_async
from ..results import scenario_ok, scenario_unavailable, throughput_case
from ..servers import BrokerServer

QUEUES = 4
SIDES = ("faststream", "sdk")
MIN_ROUNDS = 2
_topics = itertools.count(1)


def baselines(driver: str) -> list[str]:
    return []  # compared with the SDK in the same run, not with an HTTP baseline


def body(n: int) -> dict[str, Any]:
    """The message both sides send: a small order-like JSON object."""
    return {"order_id": f"o{n:08d}", "user_id": f"u{n % 1000:04d}", "amount": "12.34", "kind": "order"}


def rounds(runs: int) -> int:
    """How many rounds of each side: the runs asked for, never fewer than two (one could be the unlucky one)."""
    return max(MIN_ROUNDS, runs)


def overhead(framework: list[float], sdk: list[float]) -> float | None:
    """The framework's median rate over the SDK's (1.0: no overhead; 0.8: the framework reaches 80 % of the SDK)."""
    if not framework or not sdk or statistics.median(sdk) <= 0:
        return None
    return round(statistics.median(framework) / statistics.median(sdk), 3)


async def _publish_all(send: Callable[[dict[str, Any]], Awaitable[Any]], messages: int, concurrency: int, driver: str) -> Run:
    """``messages`` sends by ``concurrency`` tasks in flight, each send timed."""
    numbers = iter(range(messages))
    latencies: list[float] = []

    async def worker() -> None:
        for n in numbers:
            t = time.perf_counter()
            await send(body(n))
            latencies.append((time.perf_counter() - t) * 1000)

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    elapsed = time.perf_counter() - started
    latencies.sort()
    return Run(messages, messages, messages, 0, elapsed, percentile(latencies, 0.5), percentile(latencies, 0.99), driver)


async def _faststream_publish(url: str, topic: str, messages: int, concurrency: int) -> Run:
    from faststream_halfmq import HalfmqBroker  # the integration: imported only when this scenario runs

    broker = HalfmqBroker(url, logger=None)  # no per-message log lines: the figure is the framework, not its logging
    publisher = broker.publisher(topic)
    await broker.start()
    try:
        return await _publish_all(publisher.publish, messages, concurrency, "faststream HalfmqBroker publisher")
    finally:
        await broker.stop()


async def _sdk_publish(url: str, topic: str, messages: int, concurrency: int) -> Run:
    from halfmq.client import AsyncProducer

    producer: AsyncProducer[Any] = AsyncProducer(url)
    try:
        return await _publish_all(lambda b: producer.send(topic, b), messages, concurrency, "halfmq AsyncProducer")
    finally:
        await producer.close()


async def _faststream_consume(url: str, topic: str, group: str, messages: int, concurrency: int, within: float) -> Run:
    from faststream_halfmq import HalfmqBroker

    broker = HalfmqBroker(url, logger=None)  # no per-message log lines: the figure is the framework, not its logging
    handled = 0
    done = asyncio.Event()

    @broker.subscriber(topic, group=group, max_workers=concurrency)
    async def handle(order: dict[str, Any]) -> None:
        nonlocal handled
        handled += 1
        if handled >= messages:
            done.set()

    started = time.perf_counter()
    await broker.start()
    try:
        await asyncio.wait_for(done.wait(), within)
        elapsed = time.perf_counter() - started
    finally:
        await broker.stop()
    return Run(handled, handled, 0, 0, elapsed, None, None, "faststream HalfmqBroker subscriber")


async def _sdk_consume(url: str, topic: str, group: str, messages: int, concurrency: int, within: float) -> Run:
    """The subscriber's ``max_workers`` loop (faststream_halfmq.subscriber) on ``AsyncSimpleConsumer`` itself."""
    from halfmq.client import AsyncSimpleConsumer

    consumer = AsyncSimpleConsumer(url, group, topic)
    handled, busy = 0, 0
    idle, done = asyncio.Event(), asyncio.Event()
    tasks: set[asyncio.Task[None]] = set()

    async def one(message: Any) -> None:
        nonlocal handled, busy
        try:
            json.loads(message.body)
            await consumer.ack([message])
            handled += 1
            if handled >= messages:
                done.set()
        finally:
            busy -= 1
            idle.set()

    async def loop() -> None:
        nonlocal busy
        while not done.is_set():
            while busy >= concurrency:
                idle.clear()
                await idle.wait()
            for message in await consumer.receive(min(16, concurrency - busy), 30.0, 5.0):
                busy += 1
                task = asyncio.create_task(one(message))
                tasks.add(task)
                task.add_done_callback(tasks.discard)

    started = time.perf_counter()
    receiving = asyncio.create_task(loop())
    try:
        await asyncio.wait_for(done.wait(), within)
        elapsed = time.perf_counter() - started
    finally:
        receiving.cancel()
        await asyncio.gather(receiving, *tasks, return_exceptions=True)
        await consumer.close()
    return Run(handled, handled, 0, 0, elapsed, None, None, "halfmq AsyncSimpleConsumer")


async def _round(url: str, side: str, messages: int, concurrency: int, within: float) -> tuple[Run, Run]:
    """One side's publish then consume of ``messages`` on a topic of its own."""
    n = next(_topics)
    topic, group = f"BENCH_FS_{side.upper()}_{n}", f"bench_fs_{side}_{n}"
    if side == "faststream":
        published = await _faststream_publish(url, topic, messages, concurrency)
        consumed = await _faststream_consume(url, topic, group, messages, concurrency, within)
    else:
        published = await _sdk_publish(url, topic, messages, concurrency)
        consumed = await _sdk_consume(url, topic, group, messages, concurrency, within)
    return published, consumed


def run(ctx: Context) -> dict[str, Any]:
    if importlib.util.find_spec("faststream_halfmq") is None:
        reason = "faststream-halfmq is not installed (pip install ./integrations/faststream-halfmq)"
        ctx.note(f"faststream unavailable: {reason}")
        return scenario_unavailable(reason)
    s = ctx.settings
    messages, concurrency = s.faststream_messages, s.faststream_concurrency
    broker = BrokerServer(ctx.dir("faststream", "broker"), ctx.logs, env={"HALFMQ_BROKER_DEFAULT_QUEUES": str(QUEUES)})
    published: dict[str, list[Run]] = {side: [] for side in SIDES}
    consumed: dict[str, list[Run]] = {side: [] for side in SIDES}
    with broker:
        broker.start()
        if s.warmup > 0:  # one small round of each side: connections, imports, the broker's first topics
            for side in SIDES:
                run_async(_round(broker.url, side, max(100, messages // 20), concurrency, s.faststream_timeout))
        total = rounds(s.runs)
        for i in range(total):
            for side in SIDES:
                pub, con = run_async(_round(broker.url, side, messages, concurrency, s.faststream_timeout))
                published[side].append(pub)
                consumed[side].append(con)
                ctx.note(f"faststream {side} round {i + 1}/{total}: publish {pub.items_per_s:,.0f} msg/s, "
                         f"consume {con.items_per_s:,.0f} msg/s")
    cases = ctx.cases()
    for phase, runs, how in (("publish", published, "published by {c} tasks in flight"),
                             ("consume", consumed, "consumed by one subscriber handling {c} at once")):
        rates = {side: [r.items_per_s for r in runs[side]] for side in SIDES}
        for side in SIDES:
            info: dict[str, Any] = {"messages": messages}
            if side == "faststream":
                info["vs_sdk"] = overhead(rates["faststream"], rates["sdk"])
            if phase == "consume":
                info["no_latency"] = "the run is timed as a whole (first receive to the last message handled)"
            who = "HalfmqBroker (FastStream)" if side == "faststream" else "the SDK (halfmq.client)"
            cases[f"{phase}_{side}"] = throughput_case(
                runs[side], unit="msg/s", concurrency=concurrency,
                what=f"{messages:,} JSON messages {how.format(c=concurrency)}, through {who} (messages/s)", **info)
    return scenario_ok(cases, queues=QUEUES, messages=messages, rounds=rounds(s.runs),
                       publish_vs_sdk=cases["publish_faststream"]["vs_sdk"], consume_vs_sdk=cases["consume_faststream"]["vs_sdk"])
