"""The issue's performance gates, evaluated against one result document (and the peers' results).

A gate compares one halfmq headline figure with an absolute target, an
in-run baseline, or a peer's figure, times a factor. Its status is ``met``,
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


GATES: tuple[Gate, ...] = (
    Gate("send_vs_rabbitmq", "durable single send, 64 in flight ≥ 1.0× RabbitMQ publisher confirms (64 in flight)",
         "send", "single_c64", ">=", 1.0, peer=("rabbitmq_classic", "confirm_c64")),
    Gate("send_vs_fastapi_fsync", "durable single send, 64 in flight ≥ 1.5× FastAPI inline-fsync endpoint (64 in flight)",
         "send", "single_c64", ">=", 1.5, baseline=True),
    Gate("batch_send", "batched durable send (100 per request, 64 in flight) ≥ 100,000 msg/s",
         "send", "batch100_c64", ">=", absolute=100_000),
    Gate("tx_vs_rabbitmq", "half+end pairs, 64 in flight ≥ 1.0× RabbitMQ AMQP tx on 64 channels",
         "tx", "pairs_c64", ">=", 1.0, peer=("rabbitmq_classic", "tx_c64")),
    Gate("consume_vs_rabbitmq", "consume with ack (one consumer) ≥ 2× RabbitMQ consume (one consumer, prefetch 256)",
         "consume", "one_consumer", ">=", 2.0, peer=("rabbitmq_classic", "consume")),
    Gate("eos_batch10", "copy with producer transactions of 10 ≥ 0.5× the same copy done at-least-once",
         "eos", "eos_batch10", ">=", 0.5, versus_case="at_least_once_batch10"),
    Gate("eos_batch100", "copy with producer transactions of 100 ≥ 0.5× the same copy done at-least-once",
         "eos", "eos_batch100", ">=", 0.5, versus_case="at_least_once_batch100"),
    Gate("orders", "orders credited end to end ≥ 500 orders/s",
         "orders", "orders_c64", ">=", absolute=500),
    Gate("recovery", "restart after kill -9 with 1 GiB of commit log ≤ 5 s",
         "recovery", "kill9_restart", "<=", absolute=5.0, size_bound=True),
    Gate("spark", "Spark aggregation + reconciliation on 1,000,000 credits ≤ 30 s (incl. JVM start)",
         "spark", "aggregate", "<=", absolute=30.0, size_bound=True),
    Gate("replicated_send", "durable single send on a 3-node set with ack=quorum, 64 in flight ≥ 0.5× one broker (same run)",
         "replicated", "quorum_c64", ">=", 0.5, versus_case="single_c64"),
    Gate("failover", "kill -9 of a set's leader → a new leader acknowledging ≤ lease TTL + 2 s (7 s)",
         "replicated", "failover", "<=", absolute=7.0),
    Gate("replicated_vs_nats", "quorum sends, 64 in flight ≥ 1.0× NATS JetStream with 3 replicas (64 in flight)",
         "replicated", "quorum_c64", ">=", 1.0, peer=("nats_jetstream_r3", "publish_c64")),
)


def _case(doc: dict[str, Any], scenario: str, case: str) -> dict[str, Any] | None:
    sc = doc.get("scenarios", {}).get(scenario)
    if not sc or sc.get("status") != "ok":
        return None
    return sc.get("cases", {}).get(case)


def evaluate(doc: dict[str, Any], peers: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    quick = bool(doc.get("settings", {}).get("quick"))
    out = []
    for gate in GATES:
        case = _case(doc, gate.scenario, gate.case)
        measured = headline(case) if case else None
        target: float | None = None
        ref = ""
        if gate.absolute is not None:
            target = gate.absolute
        elif gate.versus_case is not None:
            other = _case(doc, gate.scenario, gate.versus_case)
            other_figure = headline(other) if other else None
            if other_figure is not None:
                target = other_figure * gate.factor
                ref = f"{gate.factor:g}× {gate.versus_case} ({other_figure:,.0f}/s, same run)"
        elif gate.baseline and case and case.get("baseline"):
            base = doc.get("baselines", {}).get(case["baseline"])
            if base:
                target = base["ops_per_s"]["median"] * gate.factor
                ref = f"{gate.factor:g}× {case['baseline']} ({base['ops_per_s']['median']:,.0f}/s, same run)"
        elif gate.peer is not None:
            fig = peer_results.figure(peers or {}, *gate.peer)
            if fig is not None:
                target = fig.median * gate.factor
                ref = f"{gate.factor:g}× {'/'.join(gate.peer)} ({fig.median:,.0f}/s)"
        if quick and gate.size_bound:
            status = "n/a"
        elif measured is None or target is None:
            status = "unknown"
        else:
            status = "met" if (measured >= target if gate.op == ">=" else measured <= target) else "missed"
        out.append({
            "id": gate.id, "text": gate.text, "scenario": gate.scenario, "case": gate.case,
            "measured": measured, "target": None if target is None else round(target, 3),
            "unit": "s" if gate.op == "<=" else "/s", "reference": ref, "status": status,
        })
    return out
