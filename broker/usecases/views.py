"""Read views: what the JSON routes and the console show of transactions, topics, groups, producers and the store.

``halfmq.wire`` structs (the console takes ``msgspec.to_builtins`` of those it adds keys to); authorization is the
caller's use case (``operator_actions``, ``topics``) or the console's session. ``Views`` is one collaborator the read
use cases share, built by the composition root.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from msgspec import UNSET

from halfmq import wire
from halfmq.broker.delivery import dead_letters
from halfmq.broker.half_messages.half_records import Tx
from halfmq.broker.messages.view import restored_view
from halfmq.broker.store.record import StoredMessage
from halfmq.broker.store.topics import TopicConfig
from halfmq.broker.usecases.answers import final_answer
from halfmq.wire import TransactionState, TransactionView

from .ports import GroupProgress, HalfMessages, Registry, StoreReads


@dataclass(eq=False)  # a use case, compared by identity
class Views:
    half_messages: HalfMessages
    store: StoreReads
    deliveries: GroupProgress
    producers: Registry
    flush_mode: str

    def tx_view(self, tx: Tx, *, duplicate: bool | None = None, half: StoredMessage | None = None) -> TransactionView:
        """A transaction's view; ``duplicate`` is said only by an end's answer (None: not at all)."""
        now_ms = self.half_messages.now() * 1000
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
            message=restored_view(half or self.half_messages.half_message(tx)),
            duplicate=UNSET if duplicate is None else duplicate,
        )

    def topic_view(self, cfg: TopicConfig) -> wire.TopicInfo:
        queues = []
        for qid in range(cfg.queues):
            lo, hi = self.store.visible.queue_range(cfg.name, qid)
            queues.append(wire.QueueInfo(queue_id=qid, min_offset=lo, max_offset=hi))
        return wire.TopicInfo(name=cfg.name, queues=queues, retention_ms=cfg.retention_ms, retention_bytes=cfg.retention_bytes)

    def group_summary(self, group: str) -> wire.GroupSummary:
        lag = in_flight = 0
        topics = []
        for topic, rows in self.deliveries.group_lag(group).items():
            lag += sum(q.lag for q in rows)
            in_flight += sum(q.in_flight for q in rows)
            topics.append(topic)
        return wire.GroupSummary(group=group, topics=topics, lag=lag, in_flight=in_flight,
                                 retrying=self.deliveries.retrying(group), dlq_depth=self.dlq_depth(group))

    def dlq_depth(self, group: str) -> int:
        return dead_letters.depth(self.store, group)  # type: ignore[arg-type]  # the store's reads are what it reads

    def dead_letters(self, group: str, offset: int, limit: int) -> list[StoredMessage]:
        return dead_letters.dead_letters(self.store, group, offset, limit)  # type: ignore[arg-type]

    def group_lag(self, group: str) -> wire.ConsumerGroupInfo:
        """A consumer group's committed offset, lag and in-flight deliveries per queue."""
        lag = self.deliveries.group_lag(group)
        return wire.ConsumerGroupInfo(group=group, topics=[
            wire.GroupTopicState(topic=topic, queues=[
                wire.GroupQueueState(queue_id=q.queue_id, committed_offset=q.committed_offset, max_offset=q.max_offset,
                                     lag=q.lag, in_flight=q.in_flight, retention_skipped=q.retention_skipped)
                for q in rows
            ])
            for topic, rows in lag.items()
        ])

    def producer_groups(self, names: Iterable[str] | None = None) -> list[wire.ProducerGroup]:
        """Producer groups (every one, or ``names``) with their live producers (client id, check URL, last heartbeat)."""
        return [wire.ProducerGroup(producer_group=g, producers=[
            wire.ProducerEntry(client_id=e.client_id, check_url=e.check_url,
                               last_heartbeat_timestamp=int(e.heard_at * 1000) if e.heard_at else None)
            for e in self.producers.live(g)])
                for g in (self.producers.group_names() if names is None else names)]

    def health(self) -> wire.Health:
        store = self.store
        return wire.Health(
            status="ok",  # no pid: the route answers without a token, and a pid is a target for kill -9 (issue 30)
            commit_log_end_offset=store.commit_log.end_offset,
            flushed_offset=store.flushed_offset,
            flush_mode=self.flush_mode,
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
