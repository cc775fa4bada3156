"""Series an operator charts, named after RocketMQ 5's (docs/metrics.md), all read at scrape time.

Nothing here runs per request: messages in per topic is the sum of its queues'
max offsets (offsets only grow), consumer lag and in-flight come from the
delivery service's per-queue progress, DLQ sends per group from the DLQ's
offsets. In-flight transactions are counted per age bucket (``age_bucket``, a
pure function) so a dashboard shows a hanging one growing old.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from halfmq.broker.delivery import dead_letters
from halfmq.broker.store.topics import is_system_topic

AGE_BUCKETS: tuple[tuple[float, str], ...] = ((10, "le_10s"), (60, "le_1m"), (600, "le_10m"), (3600, "le_1h"))
OLDEST = "gt_1h"


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


class OperatorCollector(Collector):
    def __init__(self, runtime: Any) -> None:
        self._rt = runtime

    def collect(self) -> Iterable[GaugeMetricFamily | CounterMetricFamily]:
        rt = self._rt
        topics = [cfg for cfg in rt.store.topics.all() if not is_system_topic(cfg.name)]
        messages_in = CounterMetricFamily("halfmq_messages_in", "Messages stored per topic (rocketmq_messages_in_total)", labels=["topic"])
        for cfg in topics:
            messages_in.add_metric([cfg.name], sum(rt.store.queue_range(cfg.name, q)[1] for q in range(cfg.queues)))
        yield messages_in
        yield GaugeMetricFamily("halfmq_topic_number", "Topics (rocketmq_topic_number)", value=len(topics))
        lag = GaugeMetricFamily("halfmq_consumer_lag_messages", "Messages not yet acked per group and queue (rocketmq_consumer_lag_messages)",
                                labels=["consumer_group", "topic", "queue_id"])
        ready = GaugeMetricFamily("halfmq_consumer_ready_messages", "Messages ready to deliver per group and topic (rocketmq_consumer_ready_messages)",
                                  labels=["consumer_group", "topic"])
        inflight = GaugeMetricFamily("halfmq_consumer_inflight_messages", "Delivered, not yet acked (rocketmq_consumer_inflight_messages)",
                                     labels=["consumer_group", "topic"])
        acked = CounterMetricFamily("halfmq_messages_out", "Messages acked per group and topic (rocketmq_messages_out_total)",
                                    labels=["consumer_group", "topic"])
        to_dlq = CounterMetricFamily("halfmq_send_to_dlq_messages", "Messages moved to the group's DLQ (rocketmq_send_to_dlq_messages_total)",
                                     labels=["consumer_group"])
        groups = 0
        for group in rt.delivery.groups():
            rows = rt.delivery.group_lag(group)
            if rows and all(is_system_topic(t) for t in rows):
                continue
            groups += 1
            for topic, queues in rows.items():
                for q in queues:
                    lag.add_metric([group, topic, str(q.queue_id)], q.lag)
                ready.add_metric([group, topic], sum(q.lag - q.in_flight for q in queues))
                inflight.add_metric([group, topic], sum(q.in_flight for q in queues))
                acked.add_metric([group, topic], sum(q.committed_offset - rt.store.queue_range(topic, q.queue_id)[0] for q in queues))
            to_dlq.add_metric([group], dead_letters.depth(rt.store, group))
        yield from (lag, ready, inflight, acked, to_dlq)
        yield GaugeMetricFamily("halfmq_consumer_group_number", "Consumer groups (rocketmq_consumer_group_number)", value=groups)
        by_age = GaugeMetricFamily("halfmq_transactions_in_flight", "Pending half messages by age bucket", labels=["age"])
        for label, n in count_by_age((tx.born_ms for tx in rt.transactions.pending()), rt.transactions.now() * 1000).items():
            by_age.add_metric([label], n)
        yield by_age
