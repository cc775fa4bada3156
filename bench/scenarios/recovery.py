"""`recovery`: how long a broker takes to serve again after kill -9, with 1 GiB of commit log.

The log is filled before any broker runs, by writing 256-byte messages with
``MessageStore`` directly (``bench.fill``; --quick: 32 MiB). Then, per run:
start nothing new - the broker from the previous step is running - send a
little (single and batched sends, committed transactions and a few left
pending), ``kill -9`` it, start a new broker process on the same data dir
and time from ``Popen`` to the first 200 of ``/healthz`` (poll every 20 ms).
That time includes the interpreter start and imports, the store's recovery
(from its last checkpoint), rebuilding the transaction index and binding
the port; the store's own share is read from the broker's log. One extra restart
with ``checkpoint.json`` deleted shows the worst case, a full rescan
(``full_rescan``, informational).

The page cache is warm (the bench just wrote the log): this is a process
crash, not a machine reboot.
"""

from __future__ import annotations

import re
from typing import Any

from .. import probe
from ..context import Context
from ..results import scenario_ok, timed_case
from ..servers import BrokerServer

TOPIC = "BENCH_RECOVERY"
GROUP = "bench_recovery_group"
RECOVERED = re.compile(r"recovered in ([\d.]+)s")


def baselines(driver: str) -> list[str]:
    return []


def _send_a_little(url: str, i: int) -> None:
    for k in range(10):
        probe.call("POST", f"{url}/v1/topics/{TOPIC}/messages", {"messages": [{"body": f"after-fill {i}-{k}-{n}"} for n in range(10)]})
    for k in range(10):
        tx = probe.call("POST", f"{url}/v1/transactions",
                        {"producer_group": GROUP, "topic": TOPIC, "message": {"body": f"tx {i}-{k}"}})
        if k < 8:  # two stay pending across the crash
            probe.call("POST", f"{url}/v1/transactions/{tx['transaction_id']}/end", {"producer_group": GROUP, "state": "commit"})


def _store_recovery_seconds(log_text: str) -> float | None:
    found = RECOVERED.findall(log_text)
    return float(found[-1]) if found else None


def run(ctx: Context) -> dict[str, Any]:
    from ..fill import fill  # the store itself: imported only when this scenario runs

    s = ctx.settings
    data = ctx.dir("recovery", "broker")
    ctx.note(f"recovery: filling the commit log to {s.recovery_bytes / 2**20:,.0f} MiB with MessageStore")
    filled = fill(data, TOPIC, 4, target_bytes=s.recovery_bytes, body_size=s.body_bytes)
    ctx.note(f"recovery: {filled.messages:,} messages, {filled.bytes / 2**20:,.0f} MiB in {filled.seconds:.1f} s")
    env = {"HALFMQ_BROKER_LOG_LEVEL": "info"}  # the "recovered in" line
    cases = ctx.cases()
    broker = BrokerServer(data, ctx.logs, env=env)
    runs: list[dict[str, Any]] = []
    try:
        broker.start(timeout=600)
        first_start = broker.healthy_after
        ctx.note(f"recovery: first start on the filled dir healthy after {first_start:.2f} s")
        for i in range(s.runs):
            _send_a_little(broker.url, i)
            end_before = probe.metric(broker.url, "halfmq_commit_log_end_offset")
            broker.kill9()
            broker = BrokerServer(data, ctx.logs, env=env, port=broker.port)
            broker.start(timeout=600, poll=0.02)
            store_s = _store_recovery_seconds(broker.tail(200))
            runs.append({"seconds": round(broker.healthy_after, 3), "store_recovery_s": store_s,
                         "commit_log_bytes": int(end_before) if end_before else None})
            ctx.note(f"recovery run {i + 1}/{s.runs}: healthy {broker.healthy_after:.2f} s after start "
                     f"(store recovery {store_s if store_s is not None else '?'} s)")
        # Informational worst case: the checkpoint is gone, so recovery re-reads the whole log.
        broker.kill9()
        (data / "checkpoint.json").unlink(missing_ok=True)
        broker = BrokerServer(data, ctx.logs, env=env, port=broker.port)
        broker.start(timeout=900, poll=0.05)
        rescan = {"seconds": round(broker.healthy_after, 3), "store_recovery_s": _store_recovery_seconds(broker.tail(200))}
        ctx.note(f"recovery without checkpoint (full rescan): healthy {broker.healthy_after:.2f} s after start "
                 f"(store recovery {rescan['store_recovery_s']} s)")
    finally:
        broker.stop()  # whichever broker process is the current one
    cases["kill9_restart"] = timed_case(
        runs, what=f"kill -9, then process start → /healthz 200, {filled.bytes / 2**20:,.0f} MiB commit log",
        first_start_s=round(first_start, 3))
    cases["full_rescan"] = timed_case(
        [rescan], what="informational, no gate: kill -9 and checkpoint.json deleted, so recovery scans the whole log")
    return scenario_ok(cases, fill=filled.as_json(), page_cache="warm")
