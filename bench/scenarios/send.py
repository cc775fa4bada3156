"""`send`: durable (flush_mode=sync) sends of 256-byte messages.

Cases: one message per request with 1 and with 64 requests in flight,
batches of 100 messages per request with 64 in flight (messages/s), and the
SDK's ``AsyncProducer`` with 64 concurrent callers - DESIGN section 7 asks the
benchmark to prove the SDK does not inherit httpx's collapse past ~8 in flight -
coalescing their sends (the default), with ``coalesce=False`` and unnumbered.
Every send is acknowledged only after fsync (group commit), so the fair
comparison is the FastAPI endpoint that fsyncs inline and the raw fsync loop.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import payloads, probe
from ..baselines import name_for
from ..context import Context
from ..load import Run, drive, http_session, post, run_async, wrk_run
from ..results import scenario_ok, throughput_case
from ..servers import BrokerServer

TOPIC = "BENCH_SEND"


def baselines(driver: str) -> list[str]:
    names = [name_for(b, driver) for b in ("fastapi_fsync_c1", "fastapi_fsync_c64", "fastapi_c64")]
    return [*names, "fastapi_fsync_c64", "fsync_each", "fsync_group64"]  # the SDK case is always aiohttp-paced


async def _aiohttp(url: str, body: bytes, items: int, conc: int, seconds: float, max_ops: int, warmup: float) -> Run:
    async with http_session(conc) as session:
        async def op() -> int:
            await post(session, url, body)
            return items

        return await drive(lambda _i: op, conc, seconds, max_ops, warmup=warmup)


async def sdk_sends(broker_url: str, conc: int, seconds: float, max_ops: int, warmup: float, size: int, idempotent: bool = True,
                    coalesce: bool = True, topic: str = TOPIC) -> Run:
    """``conc`` callers of one ``AsyncProducer.send`` each (``broker_url``: one broker, or a set's comma-separated nodes)."""
    from halfmq.client import AsyncProducer

    body = payloads.message_body(size)
    async with AsyncProducer(broker_url, max_in_flight=conc, idempotent=idempotent, coalesce=coalesce) as producer:
        async def op() -> int:
            result = await producer.send(topic, body)
            if result.status.value != "SEND_OK":
                raise RuntimeError(f"send status {result.status.value}")
            return 1

        run = await drive(lambda _i: op, conc, seconds, max_ops, warmup=warmup)
    run.driver = "sdk(aiohttp)"
    return run


def _measured(broker_url: str, measure: Callable[[float], Run], warmup: float, seconds: float) -> Run:
    """Warm up (discarded), then measure and attach how many requests shared one group-commit fsync."""
    if warmup > 0:
        measure(warmup)
    before = probe.metric(broker_url, "halfmq_fsyncs") or 0
    run = measure(seconds)
    fsyncs = (probe.metric(broker_url, "halfmq_fsyncs") or 0) - before
    if fsyncs > 0:
        run.extra["fsyncs"] = int(fsyncs)
        run.extra["requests_per_fsync"] = round(run.requests / fsyncs, 2)
    return run


def run(ctx: Context) -> dict[str, Any]:
    s = ctx.settings
    broker = BrokerServer(ctx.dir("send", "broker"), ctx.logs)
    with broker:
        broker.start()
        probe.create_topic(broker.url, TOPIC, 4)
        url = f"{broker.url}/v1/topics/{TOPIC}/messages"
        single = payloads.send(1, s.body_bytes)
        batch = payloads.send(s.batch, s.body_bytes)
        cases = ctx.cases()
        c = s.concurrency

        def case(name: str, body: bytes, items: int, conc: int, baseline: str, what: str) -> None:
            def measure(seconds: float) -> Run:
                if s.driver == "wrk":
                    return wrk_run(url, body, conc, seconds, items_per_request=items)
                return run_async(_aiohttp(url, body, items, conc, seconds, s.max_ops, 0.0))

            runs = ctx.repeat(f"send {name}", lambda _i, w: _measured(broker.url, measure, w, s.seconds))
            cases[name] = throughput_case(runs, unit="msg/s", concurrency=conc, what=what,
                                          baseline=name_for(baseline, s.driver) if baseline.startswith("fastapi") else baseline,
                                          messages_per_request=items)

        case("single_seq", single, 1, 1, "fastapi_fsync_c1", "durable single-message send, 1 in flight")
        case("single_c64", single, 1, c, "fastapi_fsync_c64", f"durable single-message send, {c} in flight")
        case(f"batch{s.batch}_c64", batch, s.batch, c, "fsync_group64",
             f"durable batched send, {s.batch} messages per request, {c} in flight (messages/s)")
        def sdk_case(name: str, what: str, **variant: bool) -> None:
            runs = ctx.repeat(f"send {name}", lambda _i, w: _measured(
                broker.url, lambda secs: run_async(sdk_sends(broker.url, c, secs, s.max_ops, 0.0, s.body_bytes, **variant)), w, s.seconds))
            cases[name] = throughput_case(runs, unit="msg/s", concurrency=c, what=what,
                                          baseline=name_for("fastapi_fsync_c64", "aiohttp"))

        sdk_case("sdk_single_c64", f"durable single-message send through the SDK's AsyncProducer (aiohttp), {c} concurrent "
                 "callers, numbered and coalesced (the defaults)")
        # What coalescing gains and what numbering costs: the same callers with one option changed, in the same run.
        sdk_case("sdk_single_c64_nocoalesce", f"the same SDK send with coalesce=False (one request per send), {c} in flight",
                 coalesce=False)
        sdk_case("sdk_single_c64_unnumbered", f"the same SDK send with idempotent=False (no numbers), coalesced, {c} callers",
                 idempotent=False)
    return scenario_ok(cases, topic=TOPIC, queues=4, body_bytes=s.body_bytes, flush_mode="sync")
