"""`timers`: timed messages with 1,000,000 pending (docs/history/message-types-plan.md T4).

One broker gets ``timers`` timed messages (1,000,000; --quick 50,000) due uniformly over 24 h (from 10 minutes on), sent over
HTTP in batches of 100, 64 requests in flight. Its RSS is read once the index holds them all. Then
``timer_probes`` probes (2,000; --quick 500), due uniformly over the next ``timer_probe_window`` seconds (60;
--quick 10), are sent at once to their own topic and read by one consumer (long-poll receive of 32, then ack):
a probe's lateness is the bench's wall clock when the receive answered minus its due time (same machine, same
clock; a negative figure would be a probe delivered early). Then ``kill -9`` and a restart on the same data dir,
timed from the spawn to the first 200 of ``/healthz``, ``runs`` times, with the pending count checked after
each. A second broker, on its own data dir, gets as many plain messages the same way, and its RSS is the "without"
figure (the messages' bodies stay in its log: the same bytes on disk, no timers).
"""

from __future__ import annotations

import asyncio
import random
import time
from pathlib import Path
from typing import Any

import orjson

from .. import payloads, probe
from ..context import Context
from ..load import http_session, percentile, post, run_async
from ..results import scenario_ok, timed_case
from ..servers import BrokerServer

TOPIC = "BENCH_TIMERS"
PROBE_TOPIC = "BENCH_TIMER_PROBES"
GROUP = "bench_timer_probes"
QUEUES = 4
DAY_MS = 24 * 3600 * 1000
IN_FLIGHT = 64
BATCH = 100
PENDING = "halfmq_timers_pending"
START_MS = 600_000  # the day of timers starts 10 minutes on: none is released while the bench runs, so "pending" is all


def baselines(driver: str) -> list[str]:
    return []


def rss_mib(pid: int) -> float:
    """Resident memory of ``pid`` and its children (MiB), from /proc."""
    pids = [pid] + [int(p) for p in _children(pid)]
    total_kib = 0
    for one in pids:
        try:
            status = Path(f"/proc/{one}/status").read_text()
        except OSError:
            continue
        total_kib += next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0)
    return round(total_kib / 1024, 1)


def _children(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return []


def lateness_figures(lateness_ms: list[float]) -> dict[str, Any]:
    """The probes' lateness (ms): p50/p99 as a latency case has them, min and max, and "figures" to show."""
    ordered = sorted(lateness_ms)
    p50, p99 = percentile(ordered, 0.50), percentile(ordered, 0.99)
    return {"unit": "ms", "p50_ms": _r(p50), "p99_ms": _r(p99), "min_ms": _r(ordered[0]), "max_ms": _r(ordered[-1]),
            "figures": {"median": _r(p50), "min": _r(ordered[0]), "max": _r(ordered[-1])}}


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def memory_case(mib: float, *, what: str, **info: Any) -> dict[str, Any]:
    return {"what": what, "unit": "MiB", "figures": {"median": mib, "min": mib, "max": mib}, **info}


async def _send(url: str, topic: str, count: int, due_ms: Any, body: str) -> float:
    """``count`` messages in batches of ``BATCH``, ``IN_FLIGHT`` requests at once; ``due_ms(i)`` gives a message's
    due time (None: a plain message). Seconds taken."""
    requests = iter(range(0, count, BATCH))
    started = time.perf_counter()
    async with http_session(IN_FLIGHT, timeout=120) as session:
        async def worker() -> None:
            for first in requests:
                messages = []
                for i in range(first, min(first + BATCH, count)):
                    due = due_ms(i)
                    messages.append({"body": body} if due is None else {"body": body, "deliver_at_ms": due})
                await post(session, f"{url}/v1/topics/{topic}/messages", orjson.dumps({"messages": messages}))

        await asyncio.gather(*(worker() for _ in range(IN_FLIGHT)))
    return time.perf_counter() - started


async def _probe(url: str, probes: int, window_s: float, timeout_s: float) -> list[float]:
    """Send ``probes`` probes due over the next ``window_s`` seconds, receive them with one consumer; lateness (ms)."""
    now_ms = int(time.time() * 1000)
    dues = sorted(now_ms + 1_000 + int(random.random() * window_s * 1000) for _ in range(probes))
    async with http_session(2, timeout=60) as session:
        for first in range(0, probes, BATCH):
            messages = [{"body": str(due), "deliver_at_ms": due} for due in dues[first:first + BATCH]]
            await post(session, f"{url}/v1/topics/{PROBE_TOPIC}/messages", orjson.dumps({"messages": messages}))
        base = f"{url}/v1/consumer-groups/{GROUP}/topics/{PROBE_TOPIC}"
        receive = payloads.receive(32, invisible_seconds=60.0, wait_seconds=1.0)
        lateness: list[float] = []
        deadline = time.time() + window_s + timeout_s
        while len(lateness) < probes and time.time() < deadline:
            messages = orjson.loads(await post(session, f"{base}/receive", receive))["messages"]
            received_ms = time.time() * 1000
            if messages:
                lateness += [received_ms - int(m["body"]) for m in messages]
                await post(session, f"{base}/ack", payloads.ack([m["receipt_handle"] for m in messages]))
    if len(lateness) < probes:
        raise RuntimeError(f"only {len(lateness)} of {probes} probes arrived within {window_s + timeout_s:.0f} s")
    return lateness


def _wait_pending(broker: BrokerServer, at_least: int, timeout: float = 120.0) -> int:
    """The broker's pending timers once it reports at least ``at_least`` (the sends' timers are all indexed)."""
    deadline = time.time() + timeout
    while True:
        pending = int(probe.metric(broker.url, PENDING) or 0)
        if pending >= at_least or time.time() > deadline:
            return pending
        time.sleep(0.2)


def run(ctx: Context) -> dict[str, Any]:
    s = ctx.settings
    cases = ctx.cases()
    body = payloads.message_body(s.body_bytes)
    data = ctx.dir("timers", "with")
    broker = BrokerServer(data, ctx.logs)
    restarts: list[dict[str, Any]] = []
    try:
        broker.start(timeout=120)
        for topic in (TOPIC, PROBE_TOPIC):
            probe.create_topic(broker.url, topic, QUEUES)
        now_ms = int(time.time() * 1000)
        rng = random.Random(34)
        dues = [now_ms + START_MS + rng.randrange(DAY_MS) for _ in range(s.timers)]
        sent_s = run_async(_send(broker.url, TOPIC, s.timers, dues.__getitem__, body))
        pending = _wait_pending(broker, s.timers)
        ctx.note(f"timers: {s.timers:,} timed messages sent in {sent_s:.1f} s ({s.timers / sent_s:,.0f}/s), {pending:,} pending")
        time.sleep(3)  # a checkpoint or two: the buffer becomes runs, as it would on a broker that has been up a while
        with_mib = rss_mib(broker.pid or 0)
        ctx.note(f"timers: broker RSS with {pending:,} pending timers: {with_mib:,.1f} MiB")
        lateness = run_async(_probe(broker.url, s.timer_probes, s.timer_probe_window, timeout_s=60))
        figures = lateness_figures(lateness)
        cases["probe_lateness"] = {
            "what": f"{s.timer_probes:,} probes due over {s.timer_probe_window:g} s with {s.timers:,} timers pending, one "
                    "consumer: receive time − due (ms)", "probes": s.timer_probes, "pending": pending, **figures}
        ctx.note(f"timers: probe lateness p50 {figures['p50_ms']} ms, p99 {figures['p99_ms']} ms, min {figures['min_ms']} ms, "
                 f"max {figures['max_ms']} ms")
        for i in range(s.runs):
            broker.kill9()
            broker = BrokerServer(data, ctx.logs, port=broker.port)
            broker.start(timeout=600, poll=0.02)
            after = _wait_pending(broker, 1, timeout=10)
            restarts.append({"seconds": round(broker.healthy_after, 3), "pending_after": after,
                             "rss_mib_after": rss_mib(broker.pid or 0)})
            ctx.note(f"timers restart {i + 1}/{s.runs}: healthy {broker.healthy_after:.2f} s after start, {after:,} pending")
    finally:
        broker.stop()
    cases["kill9_restart"] = timed_case(restarts, what=f"kill -9 with {s.timers:,} timers pending, then process start → /healthz 200")
    cases["rss_with_timers"] = memory_case(with_mib, what=f"broker RSS after {s.timers:,} timed messages (pending)",
                                           pending=pending, send_seconds=round(sent_s, 1))
    plain = BrokerServer(ctx.dir("timers", "without"), ctx.logs)
    with plain:
        plain.start(timeout=120)
        probe.create_topic(plain.url, TOPIC, QUEUES)
        plain_s = run_async(_send(plain.url, TOPIC, s.timers, lambda _i: None, body))
        time.sleep(3)
        without_mib = rss_mib(plain.pid or 0)
    ctx.note(f"timers: broker RSS after {s.timers:,} plain messages: {without_mib:,.1f} MiB")
    cases["rss_plain"] = memory_case(without_mib, what=f"broker RSS after {s.timers:,} plain messages (no timers)",
                                     send_seconds=round(plain_s, 1))
    return scenario_ok(cases, topic=TOPIC, probe_topic=PROBE_TOPIC, timers=s.timers, batch=BATCH, in_flight=IN_FLIGHT,
                       rss_ratio=round(with_mib / without_mib, 3) if without_mib else None)
