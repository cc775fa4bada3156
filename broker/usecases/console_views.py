"""What each console page shows, read from the runtime (the same views the JSON routes answer with).

Who may: the console's session, a cluster admin (``operator_actions.cluster_admin``), checked before any page is read.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

import msgspec

from halfmq.broker.delivery import dead_letters
from halfmq.broker.message_view import message_view
from halfmq.broker.producer_answers import view_json
from halfmq.wire import TransactionState

from .views import DLQ_PAGE, dlq_page, group_summary, producer_groups, topic_view, tx_view

if TYPE_CHECKING:
    from halfmq.broker.api.runtime import BrokerRuntime


def transactions(rt: BrokerRuntime) -> dict[str, Any]:
    pending = [msgspec.to_builtins(tx_view(rt, tx)) for tx in rt.transactions.pending()]  # dicts: the page adds its own keys
    for t in pending:  # checked at least once and still undecided: the producer does not know either
        t["hanging"] = t["check_times"] > 0 or t["age_seconds"] > rt.settings.transaction_timeout
    discarded = [msgspec.to_builtins(tx_view(rt, tx)) for tx in rt.transactions.in_state(TransactionState.DISCARDED)]
    return {"pending": pending, "discarded": discarded}


def transactional_ids(rt: BrokerRuntime) -> dict[str, Any]:
    return {"ids": [view_json(rt.producer_txns.view(t)) for t in rt.producer_txns.all()]}


class Rates:
    """Messages per second per topic, from the change of its offsets between two looks (the page polls)."""

    def __init__(self) -> None:
        self._last: dict[str, tuple[float, int]] = {}

    def rate(self, topic: str, total: int, now: float) -> float | None:
        before = self._last.get(topic)
        self._last[topic] = (now, total)
        if before is None or now - before[0] <= 0:
            return None
        return round((total - before[1]) / (now - before[0]), 1)


def topics(rt: BrokerRuntime, rates: Rates) -> dict[str, Any]:
    now = time.monotonic()
    out = []
    for cfg in rt.store.topics.all():
        view = msgspec.to_builtins(topic_view(rt, cfg))  # a dict: the page adds its own keys
        view["messages"] = sum(q["max_offset"] for q in view["queues"])
        view["rate"] = rates.rate(cfg.name, view["messages"], now)
        out.append(view)
    return {"topics": out}


def groups(rt: BrokerRuntime, dlq_offsets: Mapping[str, int] | None = None) -> dict[str, Any]:
    """Every consumer group with its queues and one page of its dead letters (from ``dlq_offsets[group]``, else the oldest)."""
    out = []
    for g in rt.delivery.groups():
        summary = msgspec.to_builtins(group_summary(rt, g))  # a dict: the page adds its own keys
        if summary["topics"] and all(t.startswith(("RMQ_SYS_", "%")) for t in summary["topics"]):
            continue  # the broker's own readers of its bookkeeping topics
        summary["queues"] = [{"topic": topic, **asdict(q)} for topic, rows in rt.delivery.group_lag(g).items() for q in rows]
        start = (dlq_offsets or {}).get(g, 0)
        summary["dlq"] = [message_view(m) for m in dead_letters.dead_letters(rt.store, g, start, DLQ_PAGE)]
        summary["dlq_page"] = msgspec.to_builtins(dlq_page(start, [m.queue_offset for m in summary["dlq"]], summary["dlq_depth"]))
        out.append(summary)
    return {"groups": out}


def producers(rt: BrokerRuntime) -> dict[str, Any]:
    return {"groups": producer_groups(rt)}


def single_node(rt: BrokerRuntime) -> dict[str, Any]:
    """The broker-set page of a broker that is not in a set: this one node."""
    store = rt.store
    return {"single": True, "cluster": {"mode": "single node", "nodes": [{
        "node_id": None, "url": f"http://{rt.settings.host}:{rt.settings.port}", "role": "single node (leader of itself)",
        "log_end": store.commit_log.end_offset, "durable_offset": store.flushed_offset}]}}
