"""`eos`: the copier's messages/s with producer transactions versus the same copy done at-least-once.

Two copiers in one consumer group copy a pre-filled topic into another, as
``examples/copy_topic.py`` does, with raw HTTP from aiohttp (the load
generator is never httpx). One copy round of ``batch`` messages is:

- at-least-once: receive ``batch`` → send them as one batch → ack them (3 requests);
- exactly-once: receive ``batch`` → begin → messages → acks → commit (5 requests, one fsync'd commit).

Each measured run uses a fresh consumer group (it starts at the backlog's
first offset) and fresh transactional ids. The gate: a transactional copy of
10 and of 100 messages per transaction keeps ≥ 0.5× the at-least-once copy of
the same batch, in the same run.
"""

from __future__ import annotations

import itertools
from typing import Any

import aiohttp
import orjson

from .. import payloads
from ..context import Context
from ..drain import Settle, drain
from ..load import Run, post, run_async
from ..results import scenario_ok, throughput_case
from ..servers import BrokerServer

SOURCE = "BENCH_EOS_IN"
TARGET = "BENCH_EOS_OUT"
QUEUES = 4
COPIERS = 2
BATCHES = (10, 100)

_runs = itertools.count()


def baselines(driver: str) -> list[str]:
    return []  # compared with the at-least-once copy measured beside it


def _copier(broker_url: str, transactional: bool) -> Settle:
    """One copy round's work after the receive: the at-least-once send + ack, or the five-request transaction."""
    run_no = next(_runs)
    ids: dict[int, dict[str, int]] = {}  # per worker: its producer id and epoch

    async def copy(session: aiohttp.ClientSession, worker: int, base: str, messages: list[dict[str, Any]]) -> None:
        copies = [{"body": m["body"].upper(), "keys": m["keys"]} for m in messages]
        handles = [m["receipt_handle"] for m in messages]
        if not transactional:
            await post(session, f"{broker_url}/v1/topics/{TARGET}/messages", orjson.dumps({"messages": copies}))
            await post(session, f"{base}/ack", payloads.ack(handles))
            return
        tid_url = f"{broker_url}/v1/transactional-ids/bench-{run_no}-{worker}"
        if worker not in ids:
            answer = orjson.loads(await post(session, f"{tid_url}/init", b"{}"))
            ids[worker] = {"producer_id": answer["producer_id"], "epoch": answer["epoch"]}
        pid = ids[worker]
        await post(session, f"{tid_url}/begin", orjson.dumps({**pid, "sequence": 0}))
        await post(session, f"{tid_url}/messages",
                   orjson.dumps({**pid, "sequence": 1, "messages": [{"topic": TARGET, **c} for c in copies]}))
        await post(session, f"{tid_url}/acks", orjson.dumps({**pid, "sequence": 2, "receipt_handles": handles}))
        await post(session, f"{tid_url}/commit", orjson.dumps(pid))

    return copy


async def _copy(broker_url: str, transactional: bool, batch: int, seconds: float, max_ops: int, warmup: float, backlog: int) -> Run:
    async def one_run(secs: float) -> Run:
        return await drain(broker_url, SOURCE, group_prefix="bench_eos", workers=COPIERS, batch=batch, backlog=backlog,
                           seconds=secs, max_ops=max_ops, warmup=0.0, settle=_copier(broker_url, transactional),
                           requests_per_op=5 if transactional else 3)

    if warmup > 0:
        await one_run(warmup)  # fresh transactional ids for the measured run, as before
    return await one_run(seconds)


def run(ctx: Context) -> dict[str, Any]:
    from ..fill import fill  # the store itself: imported only when this scenario runs

    s = ctx.settings
    data = ctx.dir("eos", "broker")
    ctx.note(f"eos: pre-filling {SOURCE} with {s.consume_prefill:,} messages of {s.body_bytes} bytes")
    filled = fill(data, SOURCE, QUEUES, messages=s.consume_prefill, body_size=s.body_bytes)
    broker = BrokerServer(data, ctx.logs)
    cases = ctx.cases()
    with broker:
        broker.start()
        for batch in BATCHES:
            for transactional in (False, True):
                name = f"{'eos' if transactional else 'at_least_once'}_batch{batch}"
                runs = ctx.repeat(f"eos {name}", lambda _i, w, t=transactional, b=batch: run_async(
                    _copy(broker.url, t, b, s.seconds, s.max_ops, w, s.consume_prefill)))
                what = (f"copy {batch} per transaction (receive, begin, messages, acks, commit), {COPIERS} copiers (messages/s)"
                        if transactional else f"copy {batch} at-least-once (receive, send batch, ack), {COPIERS} copiers (messages/s)")
                cases[name] = throughput_case(runs, unit="msg/s", concurrency=COPIERS, what=what)
            alo, eos = cases[f"at_least_once_batch{batch}"], cases[f"eos_batch{batch}"]
            if alo["ops_per_s"]["median"]:
                eos["ratio_to_at_least_once"] = round(eos["ops_per_s"]["median"] / alo["ops_per_s"]["median"], 3)
    return scenario_ok(cases, source=SOURCE, target=TARGET, queues=QUEUES, copiers=COPIERS, backlog=filled.as_json())
