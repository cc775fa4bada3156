"""Every series read from the broker's state for /metrics, one name and one label set per concept (docs/metrics.md).

Names follow RocketMQ 5's broker metrics where it has one (``rocketmq_`` becomes
``halfmq_``; its ``topic`` and ``consumer_group`` labels). Counters only count
(events since start, or offsets that only grow); depths are gauges. The
broker's own groups and topics (the half-message scan's ``CID_SYS_RMQ_TRANS``,
``RMQ_SYS_*``) are left out: their "lag" is bookkeeping, not work waiting.
Pending half messages are counted per age bucket (``age_bucket``, a pure
function) so a dashboard shows a hanging transaction growing old.

A scrape must not stall the broker, whatever the number of topics and groups (DESIGN section 16). The state is read
on the event loop a slice at a time (``Slices``: other requests are served between slices) into plain numbers, a
``StateReading``; choosing the rows and writing the text happen in a worker thread, on those numbers only. Rows are
bounded (``RowLimits``: ``metrics_max_topics``, ``metrics_max_group_topics``); the rest of a family is summed on one
``(other)`` row, so a ``sum`` over a family is still the broker's total. One scrape runs at a time: a scrape that
arrives meanwhile is answered with its text.
"""

from __future__ import annotations

import asyncio
import heapq
import time
from collections.abc import Callable, Collection, Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from prometheus_client import generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from halfmq.broker.delivery import dead_letters
from halfmq.broker.delivery.event_counts import OTHER
from halfmq.broker.delivery.queue_progress import QueueLag
from halfmq.broker.store.topics import SYSTEM_TOPICS, is_system_group, is_system_topic
from halfmq.errors import ConsumerGroupNotFound


class Observed(Protocol):
    """What a scrape reads: one broker's services (the composition root's ``BrokerRuntime``), never through a front."""

    @property
    def store(self) -> Any: ...
    @property
    def delivery(self) -> Any: ...
    @property
    def half_messages(self) -> Any: ...
    @property
    def timers(self) -> Any: ...
    @property
    def producer_txns(self) -> Any: ...
    @property
    def metrics(self) -> Any: ...
    @property
    def checks(self) -> Any: ...

AGE_BUCKETS: tuple[tuple[float, str], ...] = ((10, "le_10s"), (60, "le_1m"), (600, "le_10m"), (3600, "le_1h"))
OLDEST = "gt_1h"
CONSUMER = ["consumer_group", "topic"]
SLICE_SECONDS = 0.002  # the longest a scrape reads state before letting the event loop serve others
BASE_EVENTS = (("out", ""), ("ack", "ok"), ("nack", "ok"), ("dlq", ""), ("retention_skip", ""))  # shown at 0 on every row, so a first event is an increase
K = TypeVar("K", bound=Hashable)


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


def is_internal_topic(topic: str) -> bool:
    """Topics only the broker reads (a group's %DLQ% or %RETRY% topic may be consumed, and is charted)."""
    return topic in SYSTEM_TOPICS or topic.startswith("RMQ_SYS_")


# --- which rows a family shows (pure) ---------------------------------------------------------------------------

def top(values: Mapping[K, float], n: int, order: Callable[[K], Any] = lambda k: k) -> list[K]:
    """The ``n`` keys of highest value, ties by ``order``: the rows of their own a gauge shows."""
    return heapq.nsmallest(n, values, key=lambda k: (-values[k], order(k)))


def oldest(created: Mapping[K, int], n: int, order: Callable[[K], Any] = lambda k: k) -> list[K]:
    """The ``n`` keys created first, ties by ``order``: a counter's rows, the same ones for as long as they exist, so
    the ``(other)`` row only gains keys and only grows (at a restart too, where a top-N would pick others)."""
    return heapq.nsmallest(n, created, key=lambda k: (created[k], order(k)))


def fold(values: Mapping[K, float], keep: Collection[K]) -> tuple[dict[K, float], float | None]:
    """``values`` of the ``keep`` keys, and the sum of the others (None when there is none)."""
    kept = {k: values[k] for k in keep if k in values}
    rest = [v for k, v in values.items() if k not in kept]
    return kept, (sum(rest) if rest else None)


@dataclass(frozen=True, slots=True)
class RowLimits:
    topics: int  # metrics_max_topics
    group_topics: int  # metrics_max_group_topics (and, at most that many, consumer groups in group-only series)


# --- what a scrape reads (on the loop) -------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ConsumerReading:
    group: str
    topic: str
    queues: list[QueueLag]


@dataclass(frozen=True, slots=True)
class FollowerLag:
    node_id: str
    bytes: int  # the leader's durable log end less the follower's durable offset
    seconds: float  # since the follower last caught up with the leader's log end


@dataclass(frozen=True, slots=True)
class SetReading:
    """A broker set's node as the cluster node knows it (broker/cluster/node_view.py's ``set_reading``): plain numbers."""

    node_id: str
    role: str  # leader, fenced (leads but cannot renew its lease) or follower
    term: int
    leader_changes: int
    cluster_size: int
    in_sync: int | None  # on a leading node only: a follower does not know
    followers: tuple[FollowerLag, ...] = ()  # on the leader only
    last_failover_seconds: float | None = None


ROLES = ("leader", "fenced", "follower")  # broker/cluster/decisions.py Role


def set_families(reading: SetReading) -> Iterator[Metric]:
    """The set's series, by the names Kafka's and RocketMQ controller mode's operators look for (docs/metrics.md)."""
    role = GaugeMetricFamily("halfmq_cluster_role", "1 for this node's role in the set, 0 for the others", labels=["role"])
    for name in ROLES:
        role.add_metric([name], 1 if reading.role == name else 0)
    yield role
    yield GaugeMetricFamily("halfmq_cluster_term", "The set's term as this node knows it (the controller epoch)", value=reading.term)
    yield CounterMetricFamily("halfmq_cluster_leader_changes", "Changes of leader this node saw since start", value=reading.leader_changes)
    yield GaugeMetricFamily("halfmq_cluster_size", "Nodes in the set (cluster_size)", value=reading.cluster_size)
    if reading.role == "follower":
        return
    in_sync = reading.in_sync or 0
    yield GaugeMetricFamily("halfmq_cluster_in_sync_replicas", "Nodes in sync, the leader included (Kafka's ISR size)", value=in_sync)
    yield GaugeMetricFamily("halfmq_cluster_under_replicated", "1 when fewer nodes than the set's size are in sync "
                            "(kafka_server_replicamanager_underreplicatedpartitions)", value=1 if in_sync < reading.cluster_size else 0)
    lag_bytes = GaugeMetricFamily("halfmq_replication_lag_bytes", "Bytes of the leader's durable log a follower has not made durable",
                                  labels=["follower"])
    lag_seconds = GaugeMetricFamily("halfmq_replication_lag_seconds", "Seconds since a follower last caught up with the leader's log end",
                                    labels=["follower"])
    for follower in reading.followers:
        lag_bytes.add_metric([follower.node_id], follower.bytes)
        lag_seconds.add_metric([follower.node_id], follower.seconds)
    yield lag_bytes
    yield lag_seconds
    if reading.last_failover_seconds is not None:
        yield GaugeMetricFamily("halfmq_cluster_last_failover_seconds", "How long this node's last takeover took, in seconds",
                                value=reading.last_failover_seconds)


@dataclass
class StateReading:
    """One scrape's numbers, read on the event loop; nothing here refers to live state."""

    scalars: list[Metric]  # the families of a value or two each (store, timers, transactions, producer transactions)
    topics: dict[str, int] = field(default_factory=dict)  # topic -> messages in (the sum of its queues' max offsets)
    created: dict[str, int] = field(default_factory=dict)  # topic -> created_at
    consumers: list[ConsumerReading] = field(default_factory=list)
    groups: int = 0
    dlq_depths: dict[str, int] = field(default_factory=dict)
    counted: dict[tuple[str, str, str, str], int] = field(default_factory=dict)  # the delivery events' rows (event_counts)
    counted_pairs: list[tuple[str, str]] = field(default_factory=list)
    born_ms: list[int] = field(default_factory=list)
    now_ms: float = 0.0
    set: SetReading | None = None  # a broker set's node only


class Slices:
    """Lets the event loop run whenever this scrape has read for ``SLICE_SECONDS`` since it last did."""

    def __init__(self, seconds: float = SLICE_SECONDS, clock: Callable[[], float] = time.perf_counter) -> None:
        self._seconds, self._clock = seconds, clock
        self._since = clock()

    async def tick(self) -> None:
        if self._clock() - self._since >= self._seconds:
            await asyncio.sleep(0)
            self._since = self._clock()


async def read_state(rt: Observed, set_reading: SetReading | None = None) -> StateReading:
    slices = Slices()
    reading = StateReading(scalars=[*_store(rt), *_transactions(rt), *_producer_transactions(rt)], set=set_reading)
    store = rt.store
    for cfg in store.topics.all():
        if not is_system_topic(cfg.name):
            reading.topics[cfg.name] = sum(store.reads.queue_range(cfg.name, q)[1] for q in range(cfg.queues))
            reading.created[cfg.name] = cfg.created_at
            await slices.tick()
    groups = [g for g in rt.delivery.views.groups() if not is_system_group(g)]
    reading.groups = len(groups)
    for group in groups:
        try:
            lag = rt.delivery.views.group_lag(group)
        except ConsumerGroupNotFound:
            continue
        reading.consumers.extend(ConsumerReading(group, topic, queues) for topic, queues in lag.items() if not is_internal_topic(topic))
        reading.dlq_depths[group] = dead_letters.depth(store, group)
        await slices.tick()
    reading.counted = rt.delivery.counted.rows()
    reading.counted_pairs = rt.delivery.counted.pairs()
    pending = rt.half_messages.pending()
    for start in range(0, len(pending), 10_000):
        reading.born_ms.extend(t.born_ms for t in pending[start:start + 10_000])
        await slices.tick()
    reading.now_ms = rt.half_messages.now() * 1000
    return reading


def _store(rt: Observed) -> Iterator[Metric]:
    store, delivery = rt.store, rt.delivery
    yield GaugeMetricFamily("halfmq_commit_log_end_offset", "Commit log end offset in bytes", value=store.commit_log.end_offset)
    yield GaugeMetricFamily("halfmq_commit_log_flushed_offset", "Commit log offset known durable, in bytes", value=store.flushed_offset)
    yield CounterMetricFamily("halfmq_fsyncs", "Group-commit fsyncs since start", value=store.flush_count)
    yield GaugeMetricFamily("halfmq_commit_log_start_offset", "Commit log start offset in bytes: retention deleted what lay below it",
                            value=store.log_start.offset)
    retention = getattr(rt, "retention", None)
    yield CounterMetricFamily("halfmq_retention_deleted_files", "Commit-log, consume-queue and key-index files retention deleted since start",
                              value=retention.deleted_files if retention is not None else 0)
    yield CounterMetricFamily("halfmq_retention_early_deleted_files", "Files retention deleted before their time because the disk "
                              "was past HALFMQ_BROKER_DISK_EARLY_DELETE_RATIO, since start",
                              value=retention.early_deleted_files if retention is not None else 0)
    disk = getattr(rt, "disk", None)
    yield GaugeMetricFamily("halfmq_disk_used_ratio", "Used share of the data dir's filesystem (0..1), as last read",
                            value=disk.used_ratio if disk is not None else 0)
    yield GaugeMetricFamily("halfmq_disk_watermark_level", "0: the disk is under both watermarks; 1: past DISK_EARLY_DELETE_RATIO "
                            "(retention deletes early); 2: past DISK_REFUSE_SENDS_RATIO (sends refused)",
                            value=int(disk.level) if disk is not None else 0)
    yield CounterMetricFamily("halfmq_disk_refused_sends", "Sends refused with DISK_ALMOST_FULL since start",
                              value=disk.refused_sends if disk is not None else 0)
    yield CounterMetricFamily("halfmq_store_damaged_records", "Distinct damaged records met by reads since start", value=store.damaged.count)
    yield CounterMetricFamily("halfmq_receive_damaged_skipped", "Damaged messages consumer groups passed over since start",
                              value=delivery.damaged_skips)
    yield GaugeMetricFamily("halfmq_timers_pending", "Timed messages not yet due and released", value=rt.timers.pending)


def _transactions(rt: Observed) -> Iterator[Metric]:
    tx = rt.half_messages
    yield CounterMetricFamily("halfmq_commit_messages", "Transactions committed since start (rocketmq_commit_messages_total)",
                              value=tx.stats.commits)
    yield CounterMetricFamily("halfmq_rollback_messages", "Transactions rolled back since start (rocketmq_rollback_messages_total)",
                              value=tx.stats.rollbacks)
    yield CounterMetricFamily("halfmq_discarded_messages", "Transactions discarded after transaction_check_max checks since start",
                              value=tx.stats.discards)
    checks = dict(tx.stats.checks)
    if rt.checks is not None and rt.checks.no_producer:
        checks["no_producer"] = rt.checks.no_producer
    family = CounterMetricFamily("halfmq_check_requests", "Check-back requests by result since start", labels=["result"])
    for result, n in sorted(checks.items()):
        family.add_metric([result], n)
    yield family


def _producer_transactions(rt: Observed) -> Iterator[Metric]:
    txns = rt.producer_txns
    yield GaugeMetricFamily("halfmq_producer_transactions_open", "Producer transactions (Kafka semantics) open now", value=txns.open_count)
    yield GaugeMetricFamily("halfmq_producer_transactions_held_bytes", "Message bytes open producer transactions hold in memory",
                            value=txns.held.total)
    yield CounterMetricFamily("halfmq_producer_transaction_commits", "Producer transactions committed since start", value=txns.commits)
    yield CounterMetricFamily("halfmq_producer_transaction_aborts", "Producer transactions aborted since start (any cause)", value=txns.aborts)


# --- the families of a reading (in a worker thread) ------------------------------------------------------------

@dataclass
class Families:
    metrics: list[Metric]
    consumer_rows: list[tuple[str, str]]  # the (group, topic) pairs shown on rows of their own: the event counts' rows next


def families(reading: StateReading, limits: RowLimits) -> Families:
    metrics = list(reading.scalars)
    metrics.extend(_topic_families(reading, limits))
    if reading.set is not None:
        metrics.extend(set_families(reading.set))
    counting = set(reading.counted_pairs)  # among equal lags, the pairs already on rows of their own stay there
    shown = top({(c.group, c.topic): sum(q.lag for q in c.queues) for c in reading.consumers}, limits.group_topics,
                order=lambda pair: (pair not in counting, pair))
    metrics.extend(_consumer_families(reading, set(shown)))
    metrics.append(_dlq_depth(reading, limits))
    metrics.append(GaugeMetricFamily("halfmq_consumer_group_number", "Consumer groups, the broker's own left out "
                                     "(rocketmq_consumer_group_number)", value=reading.groups))
    metrics.extend(_consumer_events(reading))
    half = GaugeMetricFamily("halfmq_half_messages", "Half messages awaiting commit or rollback, by age (rocketmq_half_messages)",
                             labels=["age"])
    for label, n in count_by_age(reading.born_ms, reading.now_ms).items():
        half.add_metric([label], n)
    metrics.append(half)
    return Families(metrics, shown)


def messages_in_name(reading: SetReading | None) -> str:
    """A set's followers store the leader's sends again: they count them under another name, so a sum over the set's
    ``halfmq_messages_in_total`` counts each send once."""
    return "halfmq_replica_messages_in" if reading is not None and reading.role == "follower" else "halfmq_messages_in"


def _topic_families(reading: StateReading, limits: RowLimits) -> Iterator[Metric]:
    messages_in = CounterMetricFamily(messages_in_name(reading.set), "Messages stored per topic, ever: the sum of its queues' max offsets "
                                      "(rocketmq_messages_in_total; a set's followers: halfmq_replica_messages_in_total)", labels=["topic"])
    kept, rest = fold(reading.topics, oldest(reading.created, limits.topics))
    for topic in sorted(kept):
        messages_in.add_metric([topic], kept[topic])
    if rest is not None:
        messages_in.add_metric([OTHER], rest)
    yield messages_in
    yield GaugeMetricFamily("halfmq_topic_number", "Topics, the broker's own left out (rocketmq_topic_number)", value=len(reading.topics))


def _consumer_families(reading: StateReading, shown: set[tuple[str, str]]) -> Iterator[Metric]:
    lag = GaugeMetricFamily("halfmq_consumer_lag_messages", "Messages not yet acked per group and queue (rocketmq_consumer_lag_messages)",
                            labels=[*CONSUMER, "queue_id"])
    ready = GaugeMetricFamily("halfmq_consumer_ready_messages", "Messages ready to deliver (rocketmq_consumer_ready_messages)", labels=CONSUMER)
    inflight = GaugeMetricFamily("halfmq_consumer_inflight_messages", "Delivered, not yet acked (rocketmq_consumer_inflight_messages)",
                                 labels=CONSUMER)
    fifo_waiting = GaugeMetricFamily("halfmq_fifo_groups_waiting", "Message groups with a message waiting behind their "
                                     "unsettled head (FIFO)", labels=CONSUMER)
    fifo_stalled = GaugeMetricFamily("halfmq_fifo_window_stalled_seconds", "How long one unsettled message has held a queue's "
                                     "delivery stopped at FIFO_WINDOW (the longest of the pair's queues; 0: none stopped)", labels=CONSUMER)
    other = {"lag": 0, "ready": 0, "inflight": 0, "fifo": 0}
    other_stalled = 0.0  # the longest stall of the folded pairs: a duration is not summed
    folded = False
    for c in reading.consumers:
        sums = {"lag": sum(q.lag for q in c.queues), "ready": sum(q.lag - q.in_flight for q in c.queues),
                "inflight": sum(q.in_flight for q in c.queues), "fifo": sum(q.fifo_groups_waiting for q in c.queues)}
        stalled = max((q.fifo_window_stalled_seconds for q in c.queues), default=0.0)
        if (c.group, c.topic) not in shown:
            folded = True
            for name, n in sums.items():
                other[name] += n
            other_stalled = max(other_stalled, stalled)
            continue
        for q in c.queues:
            lag.add_metric([c.group, c.topic, str(q.queue_id)], q.lag)
        ready.add_metric([c.group, c.topic], sums["ready"])
        inflight.add_metric([c.group, c.topic], sums["inflight"])
        fifo_waiting.add_metric([c.group, c.topic], sums["fifo"])
        fifo_stalled.add_metric([c.group, c.topic], stalled)
    if folded:
        lag.add_metric([OTHER, OTHER, OTHER], other["lag"])
        ready.add_metric([OTHER, OTHER], other["ready"])
        inflight.add_metric([OTHER, OTHER], other["inflight"])
        fifo_waiting.add_metric([OTHER, OTHER], other["fifo"])
        fifo_stalled.add_metric([OTHER, OTHER], other_stalled)
    yield from (lag, ready, inflight, fifo_waiting, fifo_stalled)


def _dlq_depth(reading: StateReading, limits: RowLimits) -> Metric:
    family = GaugeMetricFamily("halfmq_dlq_messages", "Messages in the group's DLQ now", labels=["consumer_group"])
    depths: dict[str, float] = dict(reading.dlq_depths)
    kept, rest = fold(depths, top(depths, limits.group_topics))
    for group in sorted(kept):
        family.add_metric([group], kept[group])
    if rest is not None:
        family.add_metric([OTHER], rest)
    return family


def _consumer_events(reading: StateReading) -> Iterator[Metric]:
    """Counted per group and topic where the event happened (delivery/event_counts.py); 0 for a row with nothing yet."""
    out = CounterMetricFamily("halfmq_messages_out", "Messages delivered to consumers since start, redeliveries included "
                              "(rocketmq_messages_out_total)", labels=CONSUMER)
    acks = CounterMetricFamily("halfmq_ack_messages", "Acks since start: ok settled a delivery, expired came too late",
                               labels=[*CONSUMER, "result"])
    nacks = CounterMetricFamily("halfmq_nack_messages", "Nacks since start: ok made a delivery due again, expired came too late",
                                labels=[*CONSUMER, "result"])
    to_dlq = CounterMetricFamily("halfmq_send_to_dlq_messages", "Messages moved to the group's DLQ since start "
                                 "(rocketmq_send_to_dlq_messages_total)", labels=CONSUMER)
    skipped = CounterMetricFamily("halfmq_retention_skipped_messages", "Messages a group never received because retention "
                                  "deleted them first: it continued from the queue's earliest retained offset", labels=CONSUMER)
    named = {"out": out, "ack": acks, "nack": nacks, "dlq": to_dlq, "retention_skip": skipped}
    rows = set(reading.counted_pairs) | {(g, t) for (_, g, t, _) in reading.counted}
    zeros = {(event, g, t, result): 0 for g, t in rows for event, result in BASE_EVENTS}
    for (event, group, topic, result), n in sorted((zeros | reading.counted).items()):
        if not is_system_group(group) and not is_internal_topic(topic):
            named[event].add_metric([group, topic, result] if result else [group, topic], n)
    yield from named.values()


# --- the scrape ------------------------------------------------------------------------------------------------

class Exposition(Collector):
    """The registry's own instruments (request histograms, auth decisions) and one reading's families."""

    def __init__(self, registry: Collector, metrics: list[Metric]) -> None:
        self._registry, self._metrics = registry, metrics

    def collect(self) -> Iterator[Metric]:
        yield from self._registry.collect()
        yield from self._metrics


class OperatorMetrics:
    """The text of /metrics: ``StateReading`` on the loop, families and text in a thread, one scrape at a time."""

    def __init__(self, rt: Observed, limits: RowLimits) -> None:
        self._rt = rt
        self._limits = limits
        self._running: asyncio.Future[bytes] | None = None

    async def text(self, set_reading: SetReading | None = None) -> bytes:
        if self._running is None:
            self._running = asyncio.ensure_future(self._scrape(set_reading))
            self._running.add_done_callback(self._done)
        return await asyncio.shield(self._running)  # one waiter going away does not end the scrape the others wait for

    def _done(self, _: asyncio.Future[bytes]) -> None:
        self._running = None

    async def _scrape(self, set_reading: SetReading | None) -> bytes:
        reading = await read_state(self._rt, set_reading)
        text, rows = await asyncio.to_thread(render, reading, self._limits, self._rt.metrics.registry)
        self._rt.delivery.counted.keep(rows)  # the pairs shown now count on rows of their own from here on
        return text


def render(reading: StateReading, limits: RowLimits, registry: Collector) -> tuple[bytes, list[tuple[str, str]]]:
    """The text of a reading beside the registry's instruments, and the pairs it shows on rows of their own."""
    built = families(reading, limits)
    return generate_latest(Exposition(registry, built.metrics)), built.consumer_rows
