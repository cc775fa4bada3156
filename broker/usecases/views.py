"""Read views: what the JSON routes and the console show of transactions, topics, groups, producers and the store.

``halfmq.wire`` structs, built from the runtime (the console takes ``msgspec.to_builtins`` of those it
adds keys to); authorization is the caller's use case (``operator_actions``, ``topics``) or the console's session.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from msgspec import UNSET

from halfmq import wire
from halfmq.broker.delivery import dead_letters
from halfmq.broker.half_messages.half_message_service import SYSTEM_GROUP
from halfmq.broker.half_messages.half_records import Tx
from halfmq.broker.messages.view import restored_view
from halfmq.broker.store.record import StoredMessage
from halfmq.broker.store.topics import TopicConfig
from halfmq.broker.usecases.answers import final_answer
from halfmq.wire import TransactionState, TransactionView

if TYPE_CHECKING:
    from halfmq.broker.runtime import BrokerRuntime


def is_system_group(group: str) -> bool:
    """The broker's own consumer groups (the half-message scan's position): in no operator view of groups."""
    return group == SYSTEM_GROUP or group.startswith("CID_RMQ_SYS_")


def tx_view(rt: BrokerRuntime, tx: Tx, *, duplicate: bool | None = None, half: StoredMessage | None = None) -> TransactionView:
    """A transaction's view; ``duplicate`` is said only by an end's answer (None: not at all)."""
    now_ms = rt.half_messages.now() * 1000
    return TransactionView(
        transaction_id=tx.transaction_id,
        producer_group=tx.producer_group,
        state=tx.state,
        check_times=tx.check_times,
        born_timestamp=tx.born_ms,
        age_seconds=round((now_ms - tx.born_ms) / 1000, 3),
        last_answer=tx.last_answer,
        last_check_timestamp=tx.last_check_ms,
        next_check_timestamp=int(tx.due_at * 1000) if tx.state is TransactionState.PENDING else None,
        resolved_timestamp=tx.resolved_ms,
        final=final_answer(tx.final),
        message=restored_view(half or rt.half_messages.half_message(tx)),
        duplicate=UNSET if duplicate is None else duplicate,
    )


def topic_view(rt: BrokerRuntime, cfg: TopicConfig) -> wire.TopicInfo:
    queues = []
    for qid in range(cfg.queues):
        lo, hi = rt.store.visible.queue_range(cfg.name, qid)
        queues.append(wire.QueueInfo(queue_id=qid, min_offset=lo, max_offset=hi))
    return wire.TopicInfo(name=cfg.name, queues=queues)


def group_summary(rt: BrokerRuntime, group: str) -> wire.GroupSummary:
    lag = in_flight = 0
    topics = []
    for topic, rows in rt.delivery.views.group_lag(group).items():
        lag += sum(q.lag for q in rows)
        in_flight += sum(q.in_flight for q in rows)
        topics.append(topic)
    return wire.GroupSummary(group=group, topics=topics, lag=lag, in_flight=in_flight,
                             retrying=rt.delivery.views.retrying(group), dlq_depth=dead_letters.depth(rt.store, group))


def group_lag(rt: BrokerRuntime, group: str) -> wire.ConsumerGroupInfo:
    """A consumer group's committed offset, lag and in-flight deliveries per queue."""
    lag = rt.delivery.views.group_lag(group)
    return wire.ConsumerGroupInfo(group=group, topics=[
        wire.GroupTopicState(topic=topic, queues=[
            wire.GroupQueueState(queue_id=q.queue_id, committed_offset=q.committed_offset, max_offset=q.max_offset, lag=q.lag,
                                 in_flight=q.in_flight)
            for q in rows
        ])
        for topic, rows in lag.items()
    ])


def producer_groups(rt: BrokerRuntime, names: Iterable[str] | None = None) -> list[wire.ProducerGroup]:
    """Producer groups (every one, or ``names``) with their live producers (client id, check URL, last heartbeat), by group name."""
    return [wire.ProducerGroup(producer_group=g, producers=[
        wire.ProducerEntry(client_id=e.client_id, check_url=e.check_url,
                           last_heartbeat_timestamp=int(e.heard_at * 1000) if e.heard_at else None) for e in rt.producers.live(g)])
            for g in (rt.producers.group_names() if names is None else names)]


def health(rt: BrokerRuntime) -> wire.Health:
    store = rt.store
    return wire.Health(
        status="ok",  # no pid: the route answers without a token, and a pid is a target for kill -9 (issue 30)
        commit_log_end_offset=store.commit_log.end_offset,
        flushed_offset=store.flushed_offset,
        flush_mode=rt.settings.flush_mode,
        topics=len(store.topics.all()),
        store_problem=store.write_problem,  # why writes answer STORE_UNAVAILABLE, if they do
        recovery_seconds=round(store.recovery.seconds, 4),
    )


DLQ_PAGE = 50


def dlq_page(start: int, offsets: list[int], depth: int, size: int = DLQ_PAGE) -> wire.DlqPage:
    """Which dead letters a page of at most ``size`` shows and where the pages before and after it start.

    One description for the console's links and the CLI's "next page: --offset N", so the two cannot disagree.
    """
    last = offsets[-1] if offsets else None
    return wire.DlqPage(first=offsets[0] if offsets else None, last=last, shown=len(offsets), depth=depth,
                        previous=max(0, start - size) if start > 0 else None,
                        next=last + 1 if last is not None and len(offsets) == size and last + 1 < depth else None)
