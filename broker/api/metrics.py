"""Prometheus metrics, one registry per app (nothing global, so tests can run several brokers)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)


@dataclass
class BrokerMetrics:
    registry: CollectorRegistry
    messages_in: Counter
    send_requests: Counter
    send_latency: Histogram
    messages_out: Counter
    receive_latency: Histogram
    acks: Counter
    nacks: Counter
    tx_finish_latency: Histogram
    auth_decisions: Counter


class _StateCollector(Collector):
    """Gauges read at scrape time from live broker state."""

    def __init__(self, read: Callable[[], dict]) -> None:
        self._read = read

    def collect(self) -> Iterable[Metric]:
        state = self._read()
        lag = GaugeMetricFamily("halfmq_consumer_lag", "Messages not yet acked per consumer group", labels=["group"])
        for group, value in sorted(state.get("lag", {}).items()):
            lag.add_metric([group], value)
        yield lag
        yield GaugeMetricFamily("halfmq_commit_log_end_offset", "Commit log end offset in bytes", value=state.get("end", 0))
        yield GaugeMetricFamily("halfmq_commit_log_flushed_offset", "Commit log offset known durable", value=state.get("flushed", 0))
        yield GaugeMetricFamily("halfmq_fsyncs", "Group-commit fsyncs since start", value=state.get("fsyncs", 0))
        yield GaugeMetricFamily("halfmq_dlq_moves", "Messages moved to a DLQ since start", value=state.get("dlq", 0))
        yield CounterMetricFamily("halfmq_store_damaged_records", "Distinct damaged records met by reads since start",
                                  value=state.get("damaged_records", 0))
        yield CounterMetricFamily("halfmq_receive_damaged_skipped", "Damaged messages consumer groups passed over",
                                  value=state.get("damaged_skips", 0))
        yield GaugeMetricFamily("halfmq_half_messages", "Half messages awaiting commit or rollback", value=state.get("half_messages", 0))
        yield CounterMetricFamily("halfmq_commit_messages", "Transactions committed", value=state.get("commits", 0))
        yield CounterMetricFamily("halfmq_rollback_messages", "Transactions rolled back", value=state.get("rollbacks", 0))
        yield CounterMetricFamily("halfmq_discarded_messages", "Transactions discarded after transaction_check_max checks", value=state.get("discards", 0))
        yield GaugeMetricFamily("halfmq_producer_transactions_open", "Producer transactions (Kafka semantics) open now",
                                value=state.get("producer_txns_open", 0))
        yield GaugeMetricFamily("halfmq_producer_transactions_held_bytes", "Message bytes open producer transactions hold in memory",
                                value=state.get("producer_txns_held_bytes", 0))
        yield CounterMetricFamily("halfmq_producer_transaction_commits", "Producer transactions committed since start",
                                  value=state.get("producer_txn_commits", 0))
        yield CounterMetricFamily("halfmq_producer_transaction_aborts", "Producer transactions aborted since start (any cause)",
                                  value=state.get("producer_txn_aborts", 0))
        checks = CounterMetricFamily("halfmq_check_requests", "Check-back requests by result", labels=["result"])
        for result, value in sorted(state.get("checks", {}).items()):
            checks.add_metric([result], value)
        yield checks


def create_metrics(read_state: Callable[[], dict]) -> BrokerMetrics:
    registry = CollectorRegistry()
    registry.register(_StateCollector(read_state))
    return BrokerMetrics(
        registry=registry,
        messages_in=Counter("halfmq_send_messages", "Messages stored by sends", registry=registry),
        send_requests=Counter("halfmq_send_requests", "Send requests by outcome", ["status"], registry=registry),
        send_latency=Histogram(
            "halfmq_send_latency_seconds",
            "Send request latency including flush",
            buckets=LATENCY_BUCKETS,
            registry=registry,
        ),
        messages_out=Counter("halfmq_receive_messages", "Messages handed to consumers", registry=registry),
        receive_latency=Histogram(
            "halfmq_receive_latency_seconds",
            "Receive latency excluding long-poll waits that found nothing",
            buckets=LATENCY_BUCKETS,
            registry=registry,
        ),
        acks=Counter("halfmq_ack_messages", "Acked receipt handles", ["result"], registry=registry),
        nacks=Counter("halfmq_nack_messages", "Nacked receipt handles", ["result"], registry=registry),
        tx_finish_latency=Histogram(
            "halfmq_transaction_finish_latency_seconds",
            "From half message to commit or rollback",
            buckets=(0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900),
            registry=registry,
        ),
        auth_decisions=Counter(
            "halfmq_auth_decisions",
            "Authentication and authorization decisions by result",
            ["result"],
            registry=registry,
        ),
    )
