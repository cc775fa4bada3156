"""Read views: what the JSON routes and the console show of transactions, topics, groups, producers and the store.

A transaction's view is its ``halfmq.wire`` struct; the others are still plain dicts in the API's shapes
(docs/router-plan.md, "Remains"), built from the runtime; authorization is the caller's use case
(``operator_actions``, ``topics``) or the console's session.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from msgspec import UNSET

from halfmq.broker.delivery import dead_letters
from halfmq.broker.half_messages.half_records import Tx
from halfmq.broker.message_view import restored_view
from halfmq.broker.producer_answers import final_json
from halfmq.broker.store.record import StoredMessage
from halfmq.broker.store.topics import TopicConfig
from halfmq.wire import TransactionState, TransactionView

if TYPE_CHECKING:
    from halfmq.broker.api.runtime import BrokerRuntime


def tx_view(rt: BrokerRuntime, tx: Tx, *, duplicate: bool | None = None, half: StoredMessage | None = None) -> TransactionView:
    """A transaction's view; ``duplicate`` is said only by an end's answer (None: not at all)."""
    now_ms = rt.transactions.now() * 1000
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
        final=final_json(tx.final),
        message=restored_view(half or rt.transactions.half_message(tx)),
        duplicate=UNSET if duplicate is None else duplicate,
    )


def topic_view(rt: BrokerRuntime, cfg: TopicConfig) -> dict:
    queues = []
    for qid in range(cfg.queues):
        lo, hi = rt.store.visible.queue_range(cfg.name, qid)
        queues.append({"queue_id": qid, "min_offset": lo, "max_offset": hi})
    return {"name": cfg.name, "queues": queues}


def group_summary(rt: BrokerRuntime, group: str) -> dict:
    lag = in_flight = 0
    topics = []
    for topic, rows in rt.delivery.group_lag(group).items():
        lag += sum(q.lag for q in rows)
        in_flight += sum(q.in_flight for q in rows)
        topics.append(topic)
    return {"group": group, "topics": topics, "lag": lag, "in_flight": in_flight,
            "retrying": rt.delivery.retrying(group), "dlq_depth": dead_letters.depth(rt.store, group)}


def group_lag(rt: BrokerRuntime, group: str) -> dict[str, Any]:
    """A consumer group's committed offset, lag and in-flight deliveries per queue."""
    lag = rt.delivery.group_lag(group)
    return {
        "group": group,
        "topics": [
            {"topic": topic, "queues": [
                {"queue_id": q.queue_id, "committed_offset": q.committed_offset, "max_offset": q.max_offset, "lag": q.lag, "in_flight": q.in_flight}
                for q in rows
            ]}
            for topic, rows in lag.items()
        ],
    }


def producer_groups(rt: BrokerRuntime) -> list[dict[str, Any]]:
    """Every producer group with its live producers (client id, check URL), by group name."""
    return [{"producer_group": g, "producers": [{"client_id": e.client_id, "check_url": e.check_url} for e in members]}
            for g, members in sorted(rt.producers.groups().items())]


def health(rt: BrokerRuntime) -> dict[str, Any]:
    store = rt.store
    return {
        "status": "ok",  # no pid: the route answers without a token, and a pid is a target for kill -9 (issue 30)
        "commit_log_end_offset": store.commit_log.end_offset,
        "flushed_offset": store.flushed_offset,
        "flush_mode": rt.settings.flush_mode,
        "topics": len(store.topics.all()),
        "store_problem": store.write_problem,  # why writes answer STORE_UNAVAILABLE, if they do
        "recovery_seconds": round(store.recovery.seconds, 4),
    }
