"""Prometheus metrics, one registry per app (nothing global, so tests can run several brokers).

The instruments here are observed per request (latencies, send outcomes, auth
decisions); every other series is read from the broker's state at scrape time
(``operator_metrics``). docs/metrics.md is the table of both.
"""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Histogram

LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)


@dataclass
class BrokerMetrics:
    registry: CollectorRegistry
    send_requests: Counter
    send_latency: Histogram
    receive_latency: Histogram
    tx_finish_latency: Histogram
    auth_decisions: Counter
    timer_lateness: Histogram


def create_metrics() -> BrokerMetrics:
    registry = CollectorRegistry()
    return BrokerMetrics(
        registry=registry,
        send_requests=Counter("halfmq_send_requests", "Send requests by outcome", ["status"], registry=registry),
        send_latency=Histogram(
            "halfmq_send_latency_seconds",
            "Send request latency including flush",
            buckets=LATENCY_BUCKETS,
            registry=registry,
        ),
        receive_latency=Histogram(
            "halfmq_receive_latency_seconds",
            "Receive latency excluding long-poll waits that found nothing",
            buckets=LATENCY_BUCKETS,
            registry=registry,
        ),
        tx_finish_latency=Histogram(
            "halfmq_transaction_finish_latency_seconds",
            "From half message to its end: commit, rollback or discard",
            buckets=(0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900),
            registry=registry,
        ),
        auth_decisions=Counter(
            "halfmq_auth_decisions",
            "Authentication and authorization decisions by result",
            ["result"],
            registry=registry,
        ),
        timer_lateness=Histogram(
            "halfmq_timer_lateness_seconds",
            "From a timed message's due time to its release's store time",
            buckets=LATENCY_BUCKETS,
            registry=registry,
        ),
    )
