"""Issue 18's gates: the SDK's figures against the peers' own-client figures, batch and orders targets; and the
later issues' gates (the replicated set, FIFO, timed messages)."""

from __future__ import annotations

from typing import Any

from halfmq.bench.gates import evaluate
from halfmq.bench.results import timed_case
from halfmq.bench.scenarios.timers import lateness_figures, memory_case


def _case(ops: float, p99_ms: float = 10.0, baseline: str | None = None) -> dict[str, Any]:
    return {"ops_per_s": {"median": ops, "min": ops, "max": ops}, "p50_ms": 1.0, "p99_ms": p99_ms, "baseline": baseline}


def _doc(scenarios: dict[str, dict[str, dict[str, Any]]], baselines: dict[str, float] | None = None) -> dict[str, Any]:
    return {
        "settings": {"quick": False},
        "baselines": {name: {"ops_per_s": {"median": v}} for name, v in (baselines or {}).items()},
        "scenarios": {name: {"status": "ok", "cases": cases} for name, cases in scenarios.items()},
    }


def _peer(median: float) -> dict[str, Any]:
    return {"rps_median": median, "rps_min": median, "rps_max": median}


PEERS = {
    "redis_always": {"xadd_c64": _peer(10_000)},
    "nats_2_15_syncalways": {"publish_c64": _peer(7_000), "consume_pull_ack": _peer(18_000)},
    "rabbitmq_classic": {"tx_c64": _peer(3_000)},
    "nats_jetstream_r3": {"publish_c64": _peer(8_000)},
}


def _by_id(doc: dict[str, Any], peers: dict[str, Any] | None = PEERS) -> dict[str, dict[str, Any]]:
    return {g["id"]: g for g in evaluate(doc, peers)}


def test_the_sdk_send_must_reach_redis_and_one_and_a_half_times_nats() -> None:
    gates = _by_id(_doc({"send": {"sdk_single_c64": _case(10_500)}}))
    assert gates["sdk_send_vs_redis"]["status"] == "met"
    assert gates["sdk_send_vs_redis"]["target"] == 10_000
    assert gates["sdk_send_vs_nats"]["status"] == "met"  # 10,500 ≥ 1.5 × 7,000
    gates = _by_id(_doc({"send": {"sdk_single_c64": _case(9_999)}}))
    assert gates["sdk_send_vs_redis"]["status"] == "missed"
    assert gates["sdk_send_vs_nats"]["status"] == "missed"


def test_the_sdk_transaction_producer_and_the_pairs_must_reach_one_and_a_half_times_rabbitmq_tx() -> None:
    gates = _by_id(_doc({"tx": {"sdk_tx_c64": _case(4_500), "pairs_c64": _case(4_499)}}))
    assert gates["sdk_tx_vs_rabbitmq"]["status"] == "met"
    assert gates["tx_vs_rabbitmq"]["status"] == "missed"
    assert "rabbitmq_classic/tx_c64" in gates["sdk_tx_vs_rabbitmq"]["reference"]


def test_the_sdk_consumer_is_compared_with_nats_pull_and_ack() -> None:
    gates = _by_id(_doc({"consume": {"sdk_consumer": _case(18_000)}}))
    assert gates["sdk_consume_vs_nats"]["status"] == "met"
    assert gates["sdk_consume_vs_nats"]["target"] == 18_000


def test_the_batched_send_needs_150k_and_0_64_of_the_in_run_grouped_fsync() -> None:
    doc = _doc({"send": {"batch100_c64": _case(160_000, baseline="fsync_group64")}}, baselines={"fsync_group64": 300_000})
    gates = _by_id(doc)
    assert gates["batch_send"]["status"] == "met"
    assert gates["batch_send_vs_fsync"]["status"] == "missed"  # 160k < 0.64 × 300k = 192k
    assert gates["batch_send_vs_fsync"]["target"] == 192_000


def test_orders_need_1000_per_second_and_a_p99_of_at_most_250_ms_on_both_databases() -> None:
    doc = _doc({"orders": {"orders_c64": _case(1_000, p99_ms=250.0), "orders_c64_pg": _case(999, p99_ms=251.0)}})
    gates = _by_id(doc)
    assert gates["orders"]["status"] == "met"
    assert gates["orders_p99"]["status"] == "met"
    assert gates["orders_p99"]["unit"] == "ms" and gates["orders_p99"]["measured"] == 250.0
    assert gates["orders_pg"]["status"] == "missed"
    assert gates["orders_pg_p99"]["status"] == "missed"


def test_replicated_sends_are_compared_with_the_nats_r3_peer() -> None:
    gates = _by_id(_doc({"replicated": {"quorum_c64": _case(8_000), "single_c64": _case(9_000)}}))
    assert gates["replicated_vs_nats"]["status"] == "met"
    assert "nats_jetstream_r3/publish_c64" in gates["replicated_vs_nats"]["reference"]


def test_a_case_not_measured_yet_or_a_peer_not_run_leaves_the_gate_unknown() -> None:
    gates = _by_id(_doc({"send": {"single_c64": _case(10_000)}}))
    assert gates["sdk_send_vs_redis"]["status"] == "unknown"  # no sdk_single_c64 case
    gates = _by_id(_doc({"send": {"sdk_single_c64": _case(10_000)}}), peers={})
    assert gates["sdk_send_vs_redis"]["status"] == "unknown"  # no peer results


def _failover(*seconds: float) -> dict[str, Any]:
    return {"unit": "s", "runs": [{"seconds": x} for x in seconds],
            "seconds": {"median": sorted(seconds)[len(seconds) // 2], "min": min(seconds), "max": max(seconds)}}


def test_the_failover_gate_reads_p50_and_max_of_the_failover_case() -> None:
    gates = _by_id(_doc({"replicated": {"failover": _failover(*[1.8] * 19, 2.9)}}))
    assert (gates["failover"]["status"], gates["failover"]["measured"], gates["failover"]["target"]) == ("met", 1.8, 2.0)
    assert (gates["failover_max"]["status"], gates["failover_max"]["measured"], gates["failover_max"]["unit"]) == ("met", 2.9, "s")
    gates = _by_id(_doc({"replicated": {"failover": _failover(*[2.1] * 19, 3.2)}}))
    assert gates["failover"]["status"] == "missed"
    assert gates["failover_max"]["status"] == "missed"


def test_quorum_sends_must_reach_0_8_of_one_broker_in_the_same_run() -> None:
    gates = _by_id(_doc({"replicated": {"quorum_c64": _case(8_000), "single_c64": _case(10_000)}}))
    assert (gates["replicated_send"]["status"], gates["replicated_send"]["target"]) == ("met", 8_000)
    assert "single_c64" in gates["replicated_send"]["reference"] and "same run" in gates["replicated_send"]["reference"]
    gates = _by_id(_doc({"replicated": {"quorum_c64": _case(7_999), "single_c64": _case(10_000)}}))
    assert gates["replicated_send"]["status"] == "missed"


def test_the_sigstop_failover_gate_reads_the_p50_of_its_own_case() -> None:
    gates = _by_id(_doc({"replicated": {"failover": _failover(0.6), "failover_sigstop": _failover(*[2.4] * 19, 4.0)}}))
    assert (gates["failover_sigstop"]["status"], gates["failover_sigstop"]["measured"], gates["failover_sigstop"]["target"]) == ("met", 2.4, 3.0)
    gates = _by_id(_doc({"replicated": {"failover_sigstop": _failover(*[3.1] * 20)}}))
    assert gates["failover_sigstop"]["status"] == "missed"


def test_the_orders_on_a_set_gate_compares_with_one_broker_of_the_same_run() -> None:
    doc = _doc({"replicated": {"orders_c64": _case(1_000), "orders_set_c64": _case(800),
                               "orders_c64_pg": _case(500), "orders_set_c64_pg": _case(399)},
                "orders": {"orders_c64": _case(5_000), "orders_c64_pg": _case(5_000)}})  # another scenario's orders do not count
    gates = _by_id(doc)
    assert (gates["orders_set"]["status"], gates["orders_set"]["target"]) == ("met", 800)
    assert (gates["orders_set_pg"]["status"], gates["orders_set_pg"]["target"]) == ("missed", 400)


def test_orders_on_a_set_without_their_one_broker_twin_leave_the_gate_unknown() -> None:
    gates = _by_id(_doc({"replicated": {"orders_set_c64": _case(800)}}))
    assert gates["orders_set"]["status"] == "unknown"
    assert gates["orders_set_pg"]["status"] == "unknown"


def test_the_soak_gate_counts_elections_and_is_unknown_without_a_soak() -> None:
    soak = {**_case(5_000), "elections": 0}
    gates = _by_id(_doc({"replicated": {"quorum_soak_c64": soak}}))
    assert (gates["soak_elections"]["status"], gates["soak_elections"]["measured"], gates["soak_elections"]["unit"]) == ("met", 0, "")
    gates = _by_id(_doc({"replicated": {"quorum_soak_c64": {**soak, "elections": 1}}}))
    assert gates["soak_elections"]["status"] == "missed"
    gates = _by_id(_doc({"replicated": {"quorum_c64": _case(5_000)}}))
    assert gates["soak_elections"]["status"] == "unknown"


def test_the_fifo_gate_compares_with_four_consumers_of_the_same_run() -> None:
    gates = _by_id(_doc({"consume": {"four_consumers": _case(20_000), "fifo_four_consumers": _case(10_000)}}))
    assert (gates["fifo_consume"]["status"], gates["fifo_consume"]["target"]) == ("met", 10_000)
    assert "four_consumers" in gates["fifo_consume"]["reference"]
    gates = _by_id(_doc({"consume": {"four_consumers": _case(20_000), "fifo_four_consumers": _case(9_999)}}))
    assert gates["fifo_consume"]["status"] == "missed"


def _timers(lateness_ms: list[float], with_mib: float = 120.0, plain_mib: float = 100.0, restart_s: float = 2.0) -> dict[str, Any]:
    return _doc({"timers": {
        "probe_lateness": {"what": "probes", **lateness_figures(lateness_ms)},
        "rss_with_timers": memory_case(with_mib, what="with"), "rss_plain": memory_case(plain_mib, what="without"),
        "kill9_restart": timed_case([{"seconds": restart_s}], what="restart"),
    }})


def test_the_timer_gates_read_p99_and_min_lateness() -> None:
    on_time = [float(ms) for ms in range(1, 101)]  # p99 100 ms (nearest rank), min 1 ms
    gates = _by_id(_timers(on_time))
    assert (gates["timers_p99"]["status"], gates["timers_p99"]["measured"], gates["timers_p99"]["unit"]) == ("met", 100.0, "ms")
    assert (gates["timers_never_early"]["status"], gates["timers_never_early"]["measured"]) == ("met", 1.0)
    gates = _by_id(_timers([*on_time[1:], -0.5]))  # one probe half a millisecond early
    assert (gates["timers_never_early"]["status"], gates["timers_never_early"]["measured"]) == ("missed", -0.5)
    gates = _by_id(_timers([*on_time[:98], 250.0, 300.0]))
    assert gates["timers_p99"]["status"] == "missed"


def test_the_timer_memory_gate_compares_with_the_plain_broker_of_the_same_run() -> None:
    gates = _by_id(_timers([1.0], with_mib=120.0, plain_mib=100.0))
    assert (gates["timers_memory"]["status"], gates["timers_memory"]["target"], gates["timers_memory"]["unit"]) == ("met", 120.0, "MiB")
    assert "rss_plain" in gates["timers_memory"]["reference"] and "100.0 MiB" in gates["timers_memory"]["reference"]
    assert _by_id(_timers([1.0], with_mib=120.1, plain_mib=100.0))["timers_memory"]["status"] == "missed"


def test_the_timer_restart_gate_has_the_recovery_gates_bound_and_quick_sizes_are_not_gated() -> None:
    assert _by_id(_timers([1.0], restart_s=5.0))["timers_restart"]["status"] == "met"
    assert _by_id(_timers([1.0], restart_s=5.1))["timers_restart"]["status"] == "missed"
    quick = _timers([-1.0, 500.0], with_mib=500.0, restart_s=60.0)
    quick["settings"]["quick"] = True
    gates = _by_id(quick)
    assert [gates[g]["status"] for g in ("timers_p99", "timers_memory", "timers_restart")] == ["n/a"] * 3
    assert gates["timers_never_early"]["status"] == "missed"  # early is early at any size


def test_the_sdk_on_a_set_is_compared_with_the_sdk_on_one_broker_and_with_the_nats_r3_peer() -> None:
    gates = _by_id(_doc({"replicated": {"sdk_set_c64": _case(7_000), "sdk_single_c64": _case(10_000)}}))
    assert (gates["sdk_set_send"]["status"], gates["sdk_set_send"]["target"]) == ("missed", 8_000)
    assert "nats_jetstream_r3/publish_c64" in gates["sdk_set_vs_nats_r3"]["reference"]
