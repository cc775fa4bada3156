"""`consume`: receive up to 32 + ack them, by one and by four consumers, from a pre-filled topic.

The topic is filled before the broker starts (``bench.fill``); every measured
run reads it with a fresh consumer group, which starts at the queue's
minimum offset, so each run sees the same backlog. A consumer is one loop of
"receive 32 (no long poll) → ack those 32"; its latency is that round trip.
A run ends at its deadline, at the count bound, or when the group has acked
the whole backlog.
"""

from __future__ import annotations

import itertools
from typing import Any

import orjson

from .. import payloads
from ..context import Context
from ..load import Run, StopLoad, drive, http_session, post, run_async
from ..results import scenario_ok, throughput_case
from ..servers import BrokerServer

TOPIC = "BENCH_CONSUME"
QUEUES = 4

_groups = itertools.count()


def baselines(driver: str) -> list[str]:
    return ["fastapi_c1", "fastapi_c64"]  # consumption does no fsync per request: compare with the HTTP ceiling


async def _consume(broker_url: str, consumers: int, seconds: float, max_ops: int, warmup: float,
                   batch: int, backlog: int) -> Run:
    receive_body = payloads.receive(batch, invisible_seconds=60.0, wait_seconds=0.0)

    async def one_run(group: str, secs: float) -> Run:
        base = f"{broker_url}/v1/consumer-groups/{group}/topics/{TOPIC}"
        acked = 0

        async with http_session(consumers) as session:
            def op_for(_i: int):
                async def op() -> int:
                    nonlocal acked
                    if acked >= backlog:
                        raise StopLoad
                    messages = orjson.loads(await post(session, f"{base}/receive", receive_body))["messages"]
                    if not messages:
                        return 0
                    await post(session, f"{base}/ack", payloads.ack([m["receipt_handle"] for m in messages]))
                    acked += len(messages)
                    return len(messages)
                return op

            return await drive(op_for, consumers, secs, max_ops, requests_per_op=2)

    if warmup > 0:
        await one_run(f"bench_warmup_{next(_groups)}", warmup)
    return await one_run(f"bench_group_{next(_groups)}", seconds)


def run(ctx: Context) -> dict[str, Any]:
    from ..fill import fill  # the store itself: imported only when this scenario runs

    s = ctx.settings
    data = ctx.dir("consume", "broker")
    ctx.note(f"consume: pre-filling {TOPIC} with {s.consume_prefill:,} messages of {s.body_bytes} bytes")
    filled = fill(data, TOPIC, QUEUES, messages=s.consume_prefill, body_size=s.body_bytes)
    broker = BrokerServer(data, ctx.logs)
    cases = ctx.cases()
    with broker:
        broker.start()
        for name, consumers, base in (("one_consumer", 1, "fastapi_c1"), ("four_consumers", 4, "fastapi_c64")):
            runs = ctx.repeat(f"consume {name}", lambda _i, w, n=consumers: run_async(
                _consume(broker.url, n, s.seconds, s.max_ops, w, s.receive_batch, s.consume_prefill)))
            drained = [r for r in runs if r.items >= s.consume_prefill]
            cases[name] = throughput_case(
                runs, unit="msg/s", concurrency=consumers, baseline=base,
                what=f"receive {s.receive_batch} + ack, {consumers} consumer{'s' if consumers > 1 else ''} (messages/s)",
                drained_backlog_runs=len(drained),
            )
    return scenario_ok(cases, topic=TOPIC, queues=QUEUES, backlog=filled.as_json(), receive_batch=s.receive_batch)
