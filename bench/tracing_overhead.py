"""What the tracing hooks cost (docs/tracing.md): off against no hook at all, and on, in one run.

``python -m halfmq.bench.tracing_overhead`` prints, per call, the median of interleaved rounds:

- the send path's hook (``tracing.sent`` around the producer's submit) while no tracer provider is set and
  while one is, against calling the submit directly (what ``AsyncProducer.send`` did before the hook), and the
  consumer's ``processing`` and the broker's ``traced_half`` likewise;
- a whole ``AsyncProducer.send`` over HTTP to an in-process broker, tracing off and on (an SDK provider with a
  batching processor whose exporter drops the spans: the cost of making them, not of shipping them).

It measures; it asserts nothing (a loaded machine moves the numbers, never the verdict of a test).
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable, Sequence
from types import SimpleNamespace
from typing import Any

ROUNDS = 5
CALLS = 20_000
HTTP_SENDS = 200


def _median_ns(rounds: Sequence[float], calls: int) -> float:
    return statistics.median(rounds) / calls * 1e9


async def _timed(body: Callable[[], Awaitable[Any]], calls: int) -> float:
    started = time.perf_counter()
    for _ in range(calls):
        await body()
    return time.perf_counter() - started


def _timed_sync(body: Callable[[], Any], calls: int) -> float:
    started = time.perf_counter()
    for _ in range(calls):
        body()
    return time.perf_counter() - started


async def hooks() -> dict[str, float]:
    """Per-call nanoseconds of each hook with tracing off and on, and of the same call without it."""
    from halfmq.broker.observability.tracing import traced_half
    from halfmq.client import tracing
    from halfmq.wire import Message, OutgoingMessage

    message = OutgoingMessage(body="x")
    received = Message(msg_id="M", topic="T", queue_id=0, queue_offset=0, commit_log_offset=0, born_timestamp=0, store_timestamp=0, body="x")

    async def submit(topic: str, msg: OutgoingMessage) -> OutgoingMessage:
        return msg

    stored = SimpleNamespace(answer=SimpleNamespace(msg_id="M", transaction_id="TX"))

    def store(*args: Any) -> Any:
        return stored

    hooked_store = traced_half(store)
    body = SimpleNamespace(topic="T", producer_group="g", message=message)

    def process_bare() -> None:
        pass

    def process_hooked() -> None:
        with tracing.processing("g", received):
            pass

    async def send_bare() -> Any:
        return await submit("T", message)

    async def send_hooked() -> Any:
        return await tracing.sent("T", message, submit)

    from opentelemetry import trace

    import halfmq.tracing as core

    provider = _provider()
    rounds: dict[str, list[float]] = {f"{hook}_{mode}": [] for hook in ("send", "process", "half") for mode in ("bare", "off", "on")}
    for _ in range(ROUNDS):  # interleaved, so a slower moment of the machine falls on every side
        for mode in ("off", "on"):
            trace._TRACER_PROVIDER = provider if mode == "on" else None  # the global provider, set and taken back
            core._cached = None
            rounds["send_bare"].append(await _timed(send_bare, CALLS))
            rounds[f"send_{mode}"].append(await _timed(send_hooked, CALLS))
            rounds["process_bare"].append(_timed_sync(process_bare, CALLS))
            rounds[f"process_{mode}"].append(_timed_sync(process_hooked, CALLS))
            rounds["half_bare"].append(_timed_sync(lambda: store("rt", "who", "scope", body), CALLS))
            rounds[f"half_{mode}"].append(_timed_sync(lambda: hooked_store("rt", "who", "scope", body), CALLS))
    trace._TRACER_PROVIDER = None
    provider.shutdown()
    return {name: _median_ns(values, CALLS) for name, values in rounds.items()}


def _provider() -> Any:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    class Dropping(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(Dropping()))
    return provider


async def sends_over_http(url: str) -> dict[str, float]:
    """Microseconds per ``AsyncProducer.send`` (one at a time, HTTP to the broker) with tracing off and on, interleaved."""
    from opentelemetry import trace

    import halfmq.tracing as core
    from halfmq.client import AsyncProducer

    provider = _provider()
    rounds: dict[str, list[float]] = {"off": [], "on": []}
    async with AsyncProducer(url, coalesce=False) as producer:
        await producer.send("BENCH_TRACING", "warm-up")
        for _ in range(ROUNDS):
            for mode in ("off", "on"):
                trace._TRACER_PROVIDER = provider if mode == "on" else None  # the global provider, set and taken back
                core._cached = None
                rounds[mode].append(await _timed(lambda: producer.send("BENCH_TRACING", "x"), HTTP_SENDS))
    trace._TRACER_PROVIDER = None
    provider.shutdown()
    return {mode: statistics.median(values) / HTTP_SENDS * 1e6 for mode, values in rounds.items()}


def main() -> None:
    from halfmq.testing import InProcessBroker

    per_call = asyncio.run(hooks())
    print(f"per call (median of {ROUNDS} interleaved rounds of {CALLS}; on: an SDK provider, batching, exporter dropping):")
    for hook in ("send", "process", "half"):
        bare, off, on = (per_call[f"{hook}_{mode}"] for mode in ("bare", "off", "on"))
        print(f"  {hook:8} without the hook {bare:6.0f} ns   off {off:6.0f} ns (+{off - bare:.0f})   on {on:6.0f} ns (+{on - bare:.0f})")
    with InProcessBroker(flush_mode="async") as broker:  # the fsync is not what is measured
        http = asyncio.run(sends_over_http(broker.url))
    print(f"AsyncProducer.send over HTTP to an in-process broker (median of {ROUNDS} rounds of {HTTP_SENDS}):")
    print(f"  tracing off {http['off']:.0f} us   on {http['on']:.0f} us   (+{http['on'] - http['off']:.0f} us, "
          f"{(http['on'] / http['off'] - 1) * 100:+.1f}%: the SDK's send span and the broker's, exporter dropping)")


if __name__ == "__main__":
    main()
