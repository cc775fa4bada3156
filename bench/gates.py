"""The issue's performance gates, evaluated against one result document (and the peers' results).

A gate compares one halfmq figure (a case's headline, or its p99 latency)
with an absolute target, an in-run baseline, or a peer's figure, times a
factor. The peers are the ones `halfmq bench peers` measures, each driven by
its own Python client (issue 18: the SDK's number against theirs). Its status is ``met``,
``missed``, ``unknown`` (a figure is missing: scenario not run, peers not
run yet) or ``n/a`` (a quick run: its sizes are not the gate's).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import peers as peer_results
from .results import headline


@dataclass(frozen=True)
class Gate:
    id: str
    text: str
    scenario: str
    case: str
    op: str                        # ">=" (throughput) or "<=" (seconds)
    factor: float = 1.0
    absolute: float | None = None  # target when not relative
    baseline: bool = False         # relative to the case's own in-run baseline
    peer: tuple[str, ...] | None = None  # (result file, key…) relative to a peer figure
    size_bound: bool = False       # meaningless on --quick sizes
    versus_case: str | None = None  # relative to another case of the same scenario, same run
    metric: str = "headline"       # "headline" (ops/s or median seconds), "p99_ms" (the case's p99 latency), "max_s" (its longest run),
    #                                "elections" (term changes the case saw), "min_ms" (its smallest latency: a timer's
    #                                lateness, negative if early) or "mib" (a memory figure, MiB)


REDIS = ("redis_always", "xadd_c64")
NATS = "nats_2_15_syncalways"
RABBIT_TX = ("rabbitmq_classic", "tx_c64")

GATES: tuple[Gate, ...] = (
    # issue 18: what a Python service gets through the SDK, against each peer driven by its own Python client
    Gate("sdk_send_vs_redis", "SDK AsyncProducer.send, 64 callers, durable ≥ 1.0× Redis XADD appendfsync always (redis-py asyncio, 64 in flight)",
         "send", "sdk_single_c64", ">=", 1.0, peer=REDIS),
    Gate("sdk_send_vs_nats", "SDK AsyncProducer.send, 64 callers, durable ≥ 1.5× NATS JetStream 2.15 sync always (nats-py, 64 in flight)",
         "send", "sdk_single_c64", ">=", 1.5, peer=(NATS, "publish_c64")),
    Gate("sdk_tx_vs_rabbitmq", "SDK AsyncTransactionProducer, 64 callers ≥ 1.5× RabbitMQ AMQP tx (aio-pika, 64 channels)",
         "tx", "sdk_tx_c64", ">=", 1.5, peer=RABBIT_TX),
    Gate("tx_vs_rabbitmq", "half+end pairs, 64 in flight (wrk under --driver wrk) ≥ 1.5× RabbitMQ AMQP tx (aio-pika, 64 channels)",
         "tx", "pairs_c64", ">=", 1.5, peer=RABBIT_TX),
    Gate("sdk_consume_vs_nats", "SDK AsyncConsumer (receive + handler + ack), one process ≥ 1.0× NATS JetStream pull 256 + ack (nats-py)",
         "consume", "sdk_consumer", ">=", 1.0, peer=(NATS, "consume_pull_ack")),
    Gate("batch_send", "batched durable send (100 per request, 64 in flight) ≥ 150,000 msg/s",
         "send", "batch100_c64", ">=", absolute=150_000),
    Gate("batch_send_vs_fsync", "batched durable send (100 per request, 64 in flight) ≥ 0.64× the grouped-fsync limit (same run)",
         "send", "batch100_c64", ">=", 0.64, baseline=True),
    Gate("orders", "orders credited end to end on SQLite ≥ 1,000 orders/s",
         "orders", "orders_c64", ">=", absolute=1_000),
    Gate("orders_p99", "orders on SQLite: p99 POST → credited ≤ 250 ms",
         "orders", "orders_c64", "<=", absolute=250, metric="p99_ms"),
    Gate("orders_pg", "orders credited end to end on PostgreSQL ≥ 1,000 orders/s",
         "orders", "orders_c64_pg", ">=", absolute=1_000),
    Gate("orders_pg_p99", "orders on PostgreSQL: p99 POST → credited ≤ 250 ms",
         "orders", "orders_c64_pg", "<=", absolute=250, metric="p99_ms"),
    # earlier gates that still hold meaning
    Gate("send_vs_rabbitmq", "durable single send, 64 in flight ≥ 1.0× RabbitMQ publisher confirms (64 in flight)",
         "send", "single_c64", ">=", 1.0, peer=("rabbitmq_classic", "confirm_c64")),
    Gate("send_vs_fastapi_fsync", "durable single send, 64 in flight ≥ 1.5× FastAPI inline-fsync endpoint (64 in flight)",
         "send", "single_c64", ">=", 1.5, baseline=True),
    Gate("consume_vs_rabbitmq", "consume with ack (one consumer) ≥ 2× RabbitMQ consume (one consumer, prefetch 256)",
         "consume", "one_consumer", ">=", 2.0, peer=("rabbitmq_classic", "consume")),
    Gate("eos_batch10", "copy with producer transactions of 10 ≥ 0.5× the same copy done at-least-once",
         "eos", "eos_batch10", ">=", 0.5, versus_case="at_least_once_batch10"),
    Gate("eos_batch100", "copy with producer transactions of 100 ≥ 0.5× the same copy done at-least-once",
         "eos", "eos_batch100", ">=", 0.5, versus_case="at_least_once_batch100"),
    Gate("fifo_consume", "FIFO consume, 1,000 message groups and 4 consumers ≥ 0.5× the same unordered consume (same run)",
         "consume", "fifo_four_consumers", ">=", 0.5, versus_case="four_consumers"),
    Gate("recovery", "restart after kill -9 with 1 GiB of commit log ≤ 5 s",
         "recovery", "kill9_restart", "<=", absolute=5.0, size_bound=True),
    Gate("spark", "Spark aggregation + reconciliation on 1,000,000 credits ≤ 30 s (incl. JVM start)",
         "spark", "aggregate", "<=", absolute=30.0, size_bound=True),
    # issue 34: timed messages (halfmq bench timers): on time with 1,000,000 pending, never early, not held in memory
    Gate("timers_p99", "timed messages with 1,000,000 pending: p99 lateness (receive − due) of 2,000 probes ≤ 200 ms",
         "timers", "probe_lateness", "<=", absolute=200, metric="p99_ms", size_bound=True),
    Gate("timers_never_early", "timed messages: no probe received before its due time (min lateness ≥ 0 ms)",
         "timers", "probe_lateness", ">=", absolute=0, metric="min_ms"),
    Gate("timers_memory", "broker RSS with 1,000,000 timers pending ≤ 1.2× the same broker after 1,000,000 plain messages (same run)",
         "timers", "rss_with_timers", "<=", 1.2, versus_case="rss_plain", metric="mib", size_bound=True),
    Gate("timers_restart", "restart after kill -9 with 1,000,000 timers pending ≤ 5 s (the recovery gate's bound)",
         "timers", "kill9_restart", "<=", absolute=5.0, size_bound=True),
    # issue 32: the replicated set as the production default (halfmq bench replicated, ratios within one run)
    Gate("replicated_send", "durable single send on a 3-node set with ack=quorum, 64 in flight ≥ 0.8× one broker (same run)",
         "replicated", "quorum_c64", ">=", 0.8, versus_case="single_c64"),
    Gate("failover", "kill -9 of a set's leader → a new leader acknowledging a quorum send: p50 ≤ 2 s (≥ 20 kills)",
         "replicated", "failover", "<=", absolute=2.0),
    Gate("failover_max", "kill -9 of a set's leader → a new leader acknowledging a quorum send: max ≤ 3 s (≥ 20 kills)",
         "replicated", "failover", "<=", absolute=3.0, metric="max_s"),
    Gate("failover_sigstop", "SIGSTOP of a set's leader → a new leader acknowledging a quorum send: p50 ≤ 3 s (≥ 20 times; the lease must run out)",
         "replicated", "failover_sigstop", "<=", absolute=3.0),
    Gate("orders_set", "orders credited end to end on a 3-node set (ack=quorum), SQLite ≥ 0.8× the same on one broker (same run)",
         "replicated", "orders_set_c64", ">=", 0.8, versus_case="orders_c64"),
    Gate("orders_set_pg", "orders credited end to end on a 3-node set (ack=quorum), PostgreSQL ≥ 0.8× the same on one broker (same run)",
         "replicated", "orders_set_c64_pg", ">=", 0.8, versus_case="orders_c64_pg"),
    Gate("soak_elections", "no election over a soak of 64-in-flight quorum sends (halfmq bench replicated --soak 600)",
         "replicated", "quorum_soak_c64", "<=", absolute=0, metric="elections"),
    Gate("sdk_set_send", "the SDK's AsyncProducer.send on a 3-node set (every URL), 64 callers ≥ 0.8× the SDK on one broker (same run)",
         "replicated", "sdk_set_c64", ">=", 0.8, versus_case="sdk_single_c64"),
    Gate("sdk_set_vs_nats_r3", "the SDK's AsyncProducer.send on a 3-node set, 64 callers ≥ 1.0× NATS JetStream R3, sync always (nats-py)",
         "replicated", "sdk_set_c64", ">=", 1.0, peer=("nats_jetstream_r3", "publish_c64")),
    Gate("replicated_vs_nats", "quorum sends, 64 in flight ≥ 1.0× NATS JetStream R3 cluster, sync always (nats-py, 64 in flight)",
         "replicated", "quorum_c64", ">=", 1.0, peer=("nats_jetstream_r3", "publish_c64")),
)


def _case(doc: dict[str, Any], scenario: str, case: str) -> dict[str, Any] | None:
    sc = doc.get("scenarios", {}).get(scenario)
    if not sc or sc.get("status") != "ok":
        return None
    return sc.get("cases", {}).get(case)


def _measured(case: dict[str, Any], metric: str) -> float | None:
    if metric == "p99_ms":
        value = case.get("p99_ms")
        return None if value is None else float(value)
    if metric == "max_s":
        longest = case.get("seconds", {}).get("max")
        return None if longest is None else float(longest)
    if metric == "elections":
        elections = case.get("elections")
        return None if elections is None else float(elections)
    if metric == "min_ms":
        value = case.get("min_ms")
        return None if value is None else float(value)
    return headline(case)


def _unit(gate: Gate) -> str:
    """"ms" for a latency gate, "s" for a timed one, "/s" for throughput, "" for a count."""
    if gate.metric in ("p99_ms", "min_ms"):
        return "ms"
    if gate.metric == "mib":
        return "MiB"
    if gate.metric == "elections":
        return ""
    if gate.metric == "max_s":
        return "s"
    return "s" if gate.op == "<=" else "/s"


def _target(gate: Gate, doc: dict[str, Any], case: dict[str, Any] | None, peers: dict[str, Any] | None) -> tuple[float | None, str]:
    """The figure ``gate`` compares against and what it is (None: that figure is missing)."""
    if gate.absolute is not None:
        return gate.absolute, ""
    if gate.versus_case is not None:
        other = _case(doc, gate.scenario, gate.versus_case)
        other_figure = _measured(other, gate.metric) if other else None
        if other_figure is None:
            return None, ""
        unit = _unit(gate)
        shown = f"{other_figure:,.1f} {unit}" if unit == "MiB" else f"{other_figure:,.0f}/s"
        return other_figure * gate.factor, f"{gate.factor:g}× {gate.versus_case} ({shown}, same run)"
    if gate.baseline and case and case.get("baseline"):
        base = doc.get("baselines", {}).get(case["baseline"])
        if not base:
            return None, ""
        return base["ops_per_s"]["median"] * gate.factor, f"{gate.factor:g}× {case['baseline']} ({base['ops_per_s']['median']:,.0f}/s, same run)"
    if gate.peer is not None:
        fig = peer_results.figure(peers or {}, *gate.peer)
        if fig is None:
            return None, ""
        return fig.median * gate.factor, f"{gate.factor:g}× {'/'.join(gate.peer)} ({fig.median:,.0f}/s)"
    return None, ""


def evaluate(doc: dict[str, Any], peers: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    quick = bool(doc.get("settings", {}).get("quick"))
    out = []
    for gate in GATES:
        case = _case(doc, gate.scenario, gate.case)
        measured = _measured(case, gate.metric) if case else None
        target, ref = _target(gate, doc, case, peers)
        if quick and gate.size_bound:
            status = "n/a"
        elif measured is None or target is None:
            status = "unknown"
        else:
            status = "met" if (measured >= target if gate.op == ">=" else measured <= target) else "missed"
        out.append({
            "id": gate.id, "text": gate.text, "scenario": gate.scenario, "case": gate.case, "op": gate.op,
            "measured": measured, "target": None if target is None else round(target, 3),
            "unit": _unit(gate), "reference": ref, "status": status,
        })
    return out
