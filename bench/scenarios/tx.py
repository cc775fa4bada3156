"""`tx`: transactional messages - half send + end(commit) pairs, and a realistic mix with check-backs.

* ``pairs_seq`` / ``pairs_c64``: POST /v1/transactions then POST
  /v1/transactions/{id}/end (commit), 1 and 64 pairs in flight
  (transactions/s; latency of the pair). Both requests are durable. With
  ``--driver wrk`` these are driven by wrk (``load.wrk_pairs``: 1 and 64
  requests in flight, per-request latency) and the aiohttp-driven figures
  follow as ``*_aiohttp``: on two cores the Python client takes most of a core.
* ``mix_c64``: 64 in flight; 85 % commit, 10 % rollback, 5 % never ended.
  The never-ended ones are resolved by the broker's check service calling a
  tiny check-back server (registered by heartbeat) that answers commit. The
  broker runs with ``TRANSACTION_TIMEOUT=1`` and ``CHECK_INTERVAL=0.5`` so
  a check is due a second after the half message; the case reports the
  latency from the half send to the broker's commit (its
  ``resolved_timestamp``), which is what an order stuck in
  ``pending_check`` waits.
* ``sdk_tx_c64`` / ``sdk_tx_c64_nocoalesce``: what a Python service sees:
  ``AsyncTransactionProducer.send_in_transaction`` from 64 concurrent callers
  with a listener that just returns COMMIT, with the SDK coalescing halves and
  ends into the batch routes (the default) and with ``coalesce=False``. The
  two cases alternate run by run (A, B, A, B, ...) so their ratio comes from
  the same minutes of a shared machine.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import time
from typing import Any

import orjson

from .. import payloads, probe
from ..baselines import name_for
from ..checkback import CheckBackServer
from ..context import Context
from ..load import Run, drive, http_session, percentile, post, run_async, wrk_pairs
from ..results import scenario_ok, throughput_case
from ..servers import BrokerServer

TOPIC = "BENCH_TX"
GROUP = "bench_tx_group"
MIX_ENV = {"HALFMQ_BROKER_TRANSACTION_TIMEOUT": "1", "HALFMQ_BROKER_TRANSACTION_CHECK_INTERVAL": "0.5"}


def baselines(driver: str) -> list[str]:
    names = ["fastapi_fsync_c1", "fastapi_fsync_c64"]  # the aiohttp-driven cases
    return names + [name_for(b, driver) for b in names] if driver == "wrk" else names


async def _pairs(broker_url: str, conc: int, seconds: float, max_ops: int, warmup: float, size: int) -> Run:
    half_url = f"{broker_url}/v1/transactions"
    half = payloads.half(GROUP, TOPIC, size)
    commit = payloads.end(GROUP, "commit")
    async with http_session(conc) as session:
        async def op() -> int:
            txid = orjson.loads(await post(session, half_url, half))["transaction_id"]
            await post(session, f"{half_url}/{txid}/end", commit)
            return 1

        return await drive(lambda _i: op, conc, seconds, max_ops, requests_per_op=2, warmup=warmup)


class _Commit:
    """The trivial listener: the local transaction is nothing, and commits."""

    async def execute_local_transaction(self, msg: Any, arg: Any) -> Any:
        from halfmq.client import LocalTransactionState

        return LocalTransactionState.COMMIT_MESSAGE

    async def check_local_transaction(self, msg: Any) -> Any:
        from halfmq.client import LocalTransactionState

        return LocalTransactionState.COMMIT_MESSAGE


async def _sdk_tx(broker_url: str, conc: int, seconds: float, max_ops: int, warmup: float, size: int, coalesce: bool) -> Run:
    from halfmq.client import AsyncTransactionProducer

    body = payloads.message_body(size)
    async with AsyncTransactionProducer(broker_url, GROUP, _Commit(), check_backs=False, max_in_flight=conc,
                                        coalesce=coalesce) as producer:
        async def op() -> int:
            result = await producer.send_in_transaction(TOPIC, body)
            if result.end is None or result.end["state"] != "committed":
                raise RuntimeError(f"transaction not committed: {result.end_error or result.end}")
            return 1

        run = await drive(lambda _i: op, conc, seconds, max_ops, requests_per_op=2, warmup=warmup)
    run.driver = "sdk(aiohttp)"
    return run


def _sdk_cases(ctx: Context, broker_url: str, cases: dict[str, dict]) -> None:
    """sdk_tx_c64 (coalescing) and sdk_tx_c64_nocoalesce, alternating A, B, A, B, ... within this run."""
    s, c = ctx.settings, ctx.settings.concurrency
    runs: dict[bool, list[Run]] = {True: [], False: []}
    for i in range(s.runs):
        for coalesce in (True, False):
            run = run_async(_sdk_tx(broker_url, c, s.seconds, s.max_ops, s.warmup if i == 0 else 0.0, s.body_bytes, coalesce))
            runs[coalesce].append(run)
            ctx.note(f"tx sdk_tx_c64{'' if coalesce else '_nocoalesce'} run {i + 1}/{s.runs}: {run.items_per_s:,.0f} tx/s")
    for coalesce, name in ((True, "sdk_tx_c64"), (False, "sdk_tx_c64_nocoalesce")):
        cases[name] = throughput_case(
            runs[coalesce], unit="tx/s", concurrency=c, baseline=name_for("fastapi_fsync_c64", "aiohttp"),
            what=f"AsyncTransactionProducer.send_in_transaction, {c} concurrent callers, listener returns COMMIT, "
            + ("halves and ends coalesced into batch requests (the default)" if coalesce else "coalesce=False"))


async def _mix(broker_url: str, conc: int, seconds: float, max_ops: int, warmup: float, size: int,
               rollback: float, unended: float, seed: int, never_ended: list[tuple[str, float]]) -> Run:
    half_url = f"{broker_url}/v1/transactions"
    half = payloads.half(GROUP, TOPIC, size)
    ends = {"commit": payloads.end(GROUP, "commit"), "rollback": payloads.end(GROUP, "rollback")}
    rng = random.Random(seed)
    requests = 0
    outcomes = {"commit": 0, "rollback": 0, "unended": 0}
    recording = False

    async with http_session(conc) as session:
        async def op() -> int:
            nonlocal requests
            r = rng.random()
            sent_at = time.time()
            txid = orjson.loads(await post(session, half_url, half))["transaction_id"]
            requests += 1
            if r < unended:
                if recording:
                    never_ended.append((txid, sent_at))
                outcomes["unended"] += 1
                return 1
            state = "rollback" if r < unended + rollback else "commit"
            await post(session, f"{half_url}/{txid}/end", ends[state])
            requests += 1
            outcomes[state] += 1
            return 1

        if warmup > 0:
            await drive(lambda _i: op, conc, warmup, max_ops)
        requests = 0
        outcomes.update(commit=0, rollback=0, unended=0)
        recording = True
        run = await drive(lambda _i: op, conc, seconds, max_ops)
    run.requests = requests
    run.extra["outcomes"] = dict(outcomes)
    return run


async def _await_checks(broker_url: str, never_ended: list[tuple[str, float]], timeout: float) -> dict[str, Any]:  # noqa: ASYNC109 - one deadline for many polls
    """Wait until the check service resolved every never-ended transaction; latency half send → commit.

    Polls each transaction (GET /v1/transactions/{id}) rather than the pending
    list, so the figure comes from the broker's own ``resolved_timestamp``.
    """
    sent = dict(never_ended)
    pending = set(sent)
    resolved: dict[str, dict[str, Any]] = {}
    missing = 0
    deadline = time.monotonic() + timeout
    async with http_session(8) as session:
        async def look(txid: str) -> None:
            nonlocal missing
            async with session.get(f"{broker_url}/v1/transactions/{txid}") as resp:
                if resp.status == 404:
                    missing += 1
                    pending.discard(txid)
                    return
                tx = orjson.loads(await resp.read())
            if tx["state"] != "pending":
                resolved[txid] = tx
                pending.discard(txid)

        while pending and time.monotonic() < deadline:
            todo = list(pending)
            for i in range(0, len(todo), 64):
                await asyncio.gather(*(look(t) for t in todo[i:i + 64]))
            if pending:
                await asyncio.sleep(0.2)
    latencies = sorted(tx["resolved_timestamp"] / 1000 - sent[txid] for txid, tx in resolved.items()
                       if tx["state"] == "committed" and tx.get("resolved_timestamp"))
    states: dict[str, int] = {}
    for tx in resolved.values():
        states[tx["state"]] = states.get(tx["state"], 0) + 1
    if pending:
        states["still_pending"] = len(pending)
    if missing:
        states["missing"] = missing
    ms = lambda v: round(v * 1e3, 1) if v is not None else None  # noqa: E731
    return {
        "never_ended": len(never_ended), "states": states, "committed_by_check": len(latencies),
        "p50_ms": ms(percentile(latencies, 0.5)), "p99_ms": ms(percentile(latencies, 0.99)),
        "max_ms": ms(latencies[-1] if latencies else None),
    }


def run(ctx: Context) -> dict[str, Any]:
    s = ctx.settings
    cases = ctx.cases()
    _pair_cases(ctx, cases)
    _mix_case(ctx, cases)
    return scenario_ok(cases, topic=TOPIC, producer_group=GROUP, body_bytes=s.body_bytes, mix_broker_env=MIX_ENV)


def _pair_cases(ctx: Context, cases: dict[str, Any]) -> None:
    """Half send + end(commit) pairs, one at a time and 64 in flight; then the SDK's cases on the same broker."""
    s = ctx.settings
    c = s.concurrency
    broker = BrokerServer(ctx.dir("tx", "broker"), ctx.logs)
    with broker:
        broker.start()
        probe.create_topic(broker.url, TOPIC, 4)
        for name, conc, base in (("pairs_seq", 1, "fastapi_fsync_c1"), ("pairs_c64", c, "fastapi_fsync_c64")):
            if s.driver == "wrk":  # the broker-bound figure; the Python client's figure follows as *_aiohttp
                half, commit = payloads.half(GROUP, TOPIC, s.body_bytes), payloads.end(GROUP, "commit")
                runs = ctx.repeat(
                    f"tx {name}",
                    lambda _i, w, conc=conc, half=half, commit=commit: wrk_pairs(
                        broker.url, half, commit, conc, s.seconds, warmup=w
                    ),
                )
                cases[name] = throughput_case(
                    runs,
                    unit="tx/s",
                    concurrency=conc,
                    baseline=name_for(base, "wrk"),
                    what=f"half send + end(commit) pairs, {conc} requests in flight (wrk)",
                )
                name = f"{name}_aiohttp"
            runs = ctx.repeat(
                f"tx {name}",
                lambda _i, w, conc=conc: run_async(_pairs(broker.url, conc, s.seconds, s.max_ops, w, s.body_bytes)),
            )
            cases[name] = throughput_case(
                runs,
                unit="tx/s",
                concurrency=conc,
                baseline=name_for(base, "aiohttp"),
                what=f"half send + end(commit) pairs, {conc} in flight (aiohttp client)",
            )
        _sdk_cases(ctx, broker.url, cases)


def _mix_case(ctx: Context, cases: dict[str, Any]) -> None:
    """Commits, rollbacks and transactions never ended (committed by check-back), 64 in flight."""
    s = ctx.settings
    c = s.concurrency
    mix_broker = BrokerServer(ctx.dir("tx", "mix-broker"), ctx.logs, env=MIX_ENV)
    with mix_broker, CheckBackServer("commit") as checker:
        mix_broker.start()
        probe.create_topic(mix_broker.url, TOPIC, 4)
        checks: list[dict[str, Any]] = []

        def once(i: int, warmup: float) -> Run:
            probe.call(
                "POST",
                f"{mix_broker.url}/v1/producers/heartbeat",
                {"producer_group": GROUP, "client_id": "bench-checkback", "check_url": checker.url},
            )
            never_ended: list[tuple[str, float]] = []
            run = run_async(
                _mix(
                    mix_broker.url,
                    c,
                    s.seconds,
                    s.max_ops,
                    warmup,
                    s.body_bytes,
                    s.tx_mix_rollback,
                    s.tx_mix_unended,
                    1000 + i,
                    never_ended,
                )
            )
            result = run_async(_await_checks(mix_broker.url, never_ended, s.tx_check_wait))
            run.extra["check_back"] = result
            checks.append(result)
            ctx.note(
                f"tx mix run {i + 1}: {result['committed_by_check']}/{result['never_ended']} committed by check-back, "
                f"half→commit p50 {result['p50_ms']} ms, p99 {result['p99_ms']} ms"
            )
            return run

        runs = ctx.repeat("tx mix_c64", once)
        def med(k: str) -> float | None:
            seen = [r[k] for r in checks if r[k] is not None]
            return round(statistics.median(seen), 1) if seen else None

        cases["mix_c64"] = throughput_case(
            runs,
            unit="tx/s",
            concurrency=c,
            baseline=name_for("fastapi_fsync_c64", "aiohttp"),
            what=f"{c} in flight: {1 - s.tx_mix_rollback - s.tx_mix_unended:.0%} commit, {s.tx_mix_rollback:.0%} rollback, "
            f"{s.tx_mix_unended:.0%} never ended (committed by check-back)",
            check_back={
                "p50_ms": med("p50_ms"),
                "p99_ms": med("p99_ms"),
                "max_ms": med("max_ms"),
                "never_ended": sum(r["never_ended"] for r in checks),
                "committed_by_check": sum(r["committed_by_check"] for r in checks),
                "checks_answered": checker.calls,
                "transaction_timeout_s": 1.0,
                "check_interval_s": 0.5,
            },
        )
