"""Every series read at scrape time, one name and one label set per concept (docs/metrics.md).

Names follow RocketMQ 5's broker metrics where it has one (``rocketmq_`` becomes
``halfmq_``; its ``topic`` and ``consumer_group`` labels). Counters only count
(events since start, or offsets that only grow); depths are gauges. The
broker's own groups and topics (the half-message scan's ``CID_SYS_RMQ_TRANS``,
``RMQ_SYS_*``) are left out: their "lag" is bookkeeping, not work waiting.
Pending half messages are counted per age bucket (``age_bucket``, a pure
function) so a dashboard shows a hanging transaction growing old.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from halfmq.broker.delivery import dead_letters
from halfmq.broker.half_messages.transaction_service import SYSTEM_GROUP
from halfmq.broker.store.topics import SYSTEM_TOPICS, is_system_topic

AGE_BUCKETS: tuple[tuple[float, str], ...] = ((10, "le_10s"), (60, "le_1m"), (600, "le_10m"), (3600, "le_1h"))
OLDEST = "gt_1h"
CONSUMER = ["consumer_group", "topic"]


def age_bucket(age_seconds: float) -> str:
    """The bucket label of a transaction this many seconds old."""
    for limit, label in AGE_BUCKETS:
        if age_seconds <= limit:
            return label
    return OLDEST


def count_by_age(born_ms: Iterable[int], now_ms: float) -> dict[str, int]:
    counts = {label: 0 for _, label in AGE_BUCKETS} | {OLDEST: 0}
    for born in born_ms:
        counts[age_bucket((now_ms - born) / 1000)] += 1
    return counts


def is_system_group(group: str) -> bool:
    """The broker's own consumer groups: left out of every consumer series."""
    return group == SYSTEM_GROUP or group.startswith("CID_RMQ_SYS_")


def is_internal_topic(topic: str) -> bool:
    """Topics only the broker reads (a group's %DLQ% or %RETRY% topic may be consumed, and is charted)."""
    return topic in SYSTEM_TOPICS or topic.startswith("RMQ_SYS_")


class OperatorCollector(Collector):
    def __init__(self, runtime: Any) -> None:
        self._rt = runtime

    def collect(self) -> Iterator[Metric]:
        yield from self._store()
        yield from self._topics()
        yield from self._consumers()
        yield from self._transactions()
        yield from self._producer_transactions()

    def _store(self) -> Iterator[Metric]:
        store, delivery = self._rt.store, self._rt.delivery
        yield GaugeMetricFamily("halfmq_commit_log_end_offset", "Commit log end offset in bytes", value=store.commit_log.end_offset)
        yield GaugeMetricFamily("halfmq_commit_log_flushed_offset", "Commit log offset known durable, in bytes", value=store.flushed_offset)
        yield CounterMetricFamily("halfmq_fsyncs", "Group-commit fsyncs since start", value=store.flush_count)
        yield CounterMetricFamily("halfmq_store_damaged_records", "Distinct damaged records met by reads since start", value=store.damaged.count)
        yield CounterMetricFamily("halfmq_receive_damaged_skipped", "Damaged messages consumer groups passed over since start",
                                  value=delivery.damaged_skips)
        yield GaugeMetricFamily("halfmq_timers_pending", "Timed messages not yet due and released", value=self._rt.timers.pending)

    def _topics(self) -> Iterator[Metric]:
        store = self._rt.store
        topics = [cfg for cfg in store.topics.all() if not is_system_topic(cfg.name)]
        messages_in = CounterMetricFamily("halfmq_messages_in", "Messages stored per topic, ever: the sum of its queues' max offsets "
                                          "(rocketmq_messages_in_total)", labels=["topic"])
        for cfg in topics:
            messages_in.add_metric([cfg.name], sum(store.queue_range(cfg.name, q)[1] for q in range(cfg.queues)))
        yield messages_in
        yield GaugeMetricFamily("halfmq_topic_number", "Topics, the broker's own left out (rocketmq_topic_number)", value=len(topics))

    def _consumers(self) -> Iterator[Metric]:
        rt = self._rt
        lag = GaugeMetricFamily("halfmq_consumer_lag_messages", "Messages not yet acked per group and queue (rocketmq_consumer_lag_messages)",
                                labels=[*CONSUMER, "queue_id"])
        ready = GaugeMetricFamily("halfmq_consumer_ready_messages", "Messages ready to deliver (rocketmq_consumer_ready_messages)", labels=CONSUMER)
        inflight = GaugeMetricFamily("halfmq_consumer_inflight_messages", "Delivered, not yet acked (rocketmq_consumer_inflight_messages)",
                                     labels=CONSUMER)
        fifo_waiting = GaugeMetricFamily("halfmq_fifo_groups_waiting", "Message groups with a message waiting behind their "
                                         "unsettled head (FIFO)", labels=CONSUMER)
        dlq_depth = GaugeMetricFamily("halfmq_dlq_messages", "Messages in the group's DLQ now", labels=["consumer_group"])
        groups = [g for g in rt.delivery.groups() if not is_system_group(g)]
        pairs: list[tuple[str, str]] = []
        for group in groups:
            for topic, queues in rt.delivery.group_lag(group).items():
                if is_internal_topic(topic):
                    continue
                pairs.append((group, topic))
                for q in queues:
                    lag.add_metric([group, topic, str(q.queue_id)], q.lag)
                ready.add_metric([group, topic], sum(q.lag - q.in_flight for q in queues))
                inflight.add_metric([group, topic], sum(q.in_flight for q in queues))
                fifo_waiting.add_metric([group, topic], sum(q.fifo_groups_waiting for q in queues))
            dlq_depth.add_metric([group], dead_letters.depth(rt.store, group))
        yield from (lag, ready, inflight, fifo_waiting, dlq_depth)
        yield GaugeMetricFamily("halfmq_consumer_group_number", "Consumer groups, the broker's own left out (rocketmq_consumer_group_number)",
                                value=len(groups))
        yield from self._consumer_events(pairs)

    def _consumer_events(self, pairs: list[tuple[str, str]]) -> Iterator[Metric]:
        """Counted per group and topic; 0 for a pair that has nothing yet, so the first event is an increase."""
        out = CounterMetricFamily("halfmq_messages_out", "Messages delivered to consumers since start, redeliveries included "
                                  "(rocketmq_messages_out_total)", labels=CONSUMER)
        acks = CounterMetricFamily("halfmq_ack_messages", "Acks since start: ok settled a delivery, expired came too late",
                                   labels=[*CONSUMER, "result"])
        nacks = CounterMetricFamily("halfmq_nack_messages", "Nacks since start: ok made a delivery due again, expired came too late",
                                    labels=[*CONSUMER, "result"])
        to_dlq = CounterMetricFamily("halfmq_send_to_dlq_messages", "Messages moved to the group's DLQ since start "
                                     "(rocketmq_send_to_dlq_messages_total)", labels=CONSUMER)
        families = {"out": out, "ack": acks, "nack": nacks, "dlq": to_dlq}
        zeros = {(event, g, t, result): 0 for g, t in pairs for event, result in (("out", ""), ("ack", "ok"), ("nack", "ok"), ("dlq", ""))}
        for (event, group, topic, result), n in sorted((zeros | self._rt.delivery.counted).items()):
            if not is_system_group(group) and not is_internal_topic(topic):
                families[event].add_metric([group, topic, result] if result else [group, topic], n)
        yield from families.values()

    def _transactions(self) -> Iterator[Metric]:
        tx = self._rt.transactions
        half = GaugeMetricFamily("halfmq_half_messages", "Half messages awaiting commit or rollback, by age (rocketmq_half_messages)",
                                 labels=["age"])
        for label, n in count_by_age((t.born_ms for t in tx.pending()), tx.now() * 1000).items():
            half.add_metric([label], n)
        yield half
        yield CounterMetricFamily("halfmq_commit_messages", "Transactions committed since start (rocketmq_commit_messages_total)",
                                  value=tx.stats.commits)
        yield CounterMetricFamily("halfmq_rollback_messages", "Transactions rolled back since start (rocketmq_rollback_messages_total)",
                                  value=tx.stats.rollbacks)
        yield CounterMetricFamily("halfmq_discarded_messages", "Transactions discarded after transaction_check_max checks since start",
                                  value=tx.stats.discards)
        checks = dict(tx.stats.checks)
        if self._rt.checks is not None and self._rt.checks.no_producer:
            checks["no_producer"] = self._rt.checks.no_producer
        family = CounterMetricFamily("halfmq_check_requests", "Check-back requests by result since start", labels=["result"])
        for result, n in sorted(checks.items()):
            family.add_metric([result], n)
        yield family

    def _producer_transactions(self) -> Iterator[Metric]:
        txns = self._rt.producer_txns
        yield GaugeMetricFamily("halfmq_producer_transactions_open", "Producer transactions (Kafka semantics) open now", value=txns.open_count)
        yield GaugeMetricFamily("halfmq_producer_transactions_held_bytes", "Message bytes open producer transactions hold in memory",
                                value=txns.held.total)
        yield CounterMetricFamily("halfmq_producer_transaction_commits", "Producer transactions committed since start", value=txns.commits)
        yield CounterMetricFamily("halfmq_producer_transaction_aborts", "Producer transactions aborted since start (any cause)", value=txns.aborts)
