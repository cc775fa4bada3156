"""`consume`: receive up to 32 + ack them, by one and by four consumers and by the SDK's AsyncConsumer, from a pre-filled topic;
and by four consumers from a topic of 1,000 FIFO message groups (``fifo_four_consumers``: one message of a group in flight).

The topic is filled before the broker starts (``bench.fill``); every measured
run reads it with a fresh consumer group, which starts at the queue's
minimum offset, so each run sees the same backlog. A consumer is one loop of
"receive 32 (no long poll) → ack those 32"; its latency is that round trip.
A run ends at its deadline, at the count bound, or when the group has acked
the whole backlog. The loop is ``bench.drain`` (shared with ``eos``);
``sdk_consumer`` is one ``AsyncConsumer`` with a trivial async handler in the
bench process, the figure a Python service sees.
"""

from __future__ import annotations

from typing import Any

from ..context import Context
from ..drain import drain, drain_with_sdk
from ..load import run_async
from ..results import scenario_ok, throughput_case
from ..servers import BrokerServer

TOPIC = "BENCH_CONSUME"
FIFO_TOPIC = "BENCH_CONSUME_FIFO"
QUEUES = 4
FIFO_GROUPS = 1_000


def baselines(driver: str) -> list[str]:
    return ["fastapi_c1", "fastapi_c64"]  # consumption does no fsync per request: compare with the HTTP ceiling


def run(ctx: Context) -> dict[str, Any]:
    from ..fill import fill  # the store itself: imported only when this scenario runs

    s = ctx.settings
    data = ctx.dir("consume", "broker")
    ctx.note(f"consume: pre-filling {TOPIC} with {s.consume_prefill:,} messages of {s.body_bytes} bytes")
    filled = fill(data, TOPIC, QUEUES, messages=s.consume_prefill, body_size=s.body_bytes)
    ctx.note(f"consume: pre-filling {FIFO_TOPIC} with {s.consume_prefill:,} messages in {FIFO_GROUPS:,} message groups")
    fill(data, FIFO_TOPIC, QUEUES, messages=s.consume_prefill, body_size=s.body_bytes, groups=FIFO_GROUPS)
    broker = BrokerServer(data, ctx.logs)
    cases = ctx.cases()
    with broker:
        broker.start()
        for name, topic, consumers, base in (("one_consumer", TOPIC, 1, "fastapi_c1"), ("four_consumers", TOPIC, 4, "fastapi_c64"),
                                             ("fifo_four_consumers", FIFO_TOPIC, 4, "fastapi_c64")):
            runs = ctx.repeat(f"consume {name}", lambda _i, w, n=consumers, t=topic: run_async(drain(
                broker.url, t, group_prefix="bench_group", workers=n, batch=s.receive_batch,
                backlog=s.consume_prefill, seconds=s.seconds, max_ops=s.max_ops, warmup=w)))
            drained = [r for r in runs if r.items >= s.consume_prefill]
            fifo = f", {FIFO_GROUPS:,} message groups" if topic == FIFO_TOPIC else ""
            cases[name] = throughput_case(
                runs, unit="msg/s", concurrency=consumers, baseline=base,
                what=f"receive {s.receive_batch} + ack, {consumers} consumer{'s' if consumers > 1 else ''}{fifo} (messages/s)",
                drained_backlog_runs=len(drained),
            )
        runs = ctx.repeat("consume sdk_consumer", lambda _i, w: run_async(drain_with_sdk(
            broker.url, TOPIC, group_prefix="bench_sdk", batch=s.receive_batch, backlog=s.consume_prefill,
            seconds=s.seconds, max_ops=s.max_ops, warmup=w)))
        cases["sdk_consumer"] = throughput_case(
            runs, unit="msg/s", concurrency=1, baseline="fastapi_c1",
            what=f"AsyncConsumer (SDK) receive {s.receive_batch} + trivial async handler + ack, one consumer (messages/s)",
            drained_backlog_runs=sum(1 for r in runs if r.items >= s.consume_prefill),
            no_latency="the SDK hides its receive and ack round trips; the figure is throughput only",
        )
    return scenario_ok(cases, topic=TOPIC, queues=QUEUES, backlog=filled.as_json(), receive_batch=s.receive_batch,
                       fifo_topic=FIFO_TOPIC, fifo_groups=FIFO_GROUPS)
