"""What each console page shows, read from the runtime (the same views the JSON routes answer with)."""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import Any

from halfmq.broker.delivery import dead_letters
from halfmq.broker.message_view import message_view
from halfmq.broker.producer_answers import view_json
from halfmq.wire import TransactionState

from ..routes.operator_views import group_summary
from ..routes.topics import topic_view
from ..routes.transactions import tx_view
from ..runtime import BrokerRuntime


def transactions(rt: BrokerRuntime) -> dict[str, Any]:
    pending = [tx_view(rt, tx) for tx in rt.transactions.pending()]
    for t in pending:  # checked at least once and still undecided: the producer does not know either
        t["hanging"] = t["check_times"] > 0 or t["age_seconds"] > rt.settings.transaction_timeout
        t["next_check_in"] = round(t["next_check_timestamp"] / 1000 - time.time(), 1) if t["next_check_timestamp"] else None
    discarded = [tx_view(rt, tx) for tx in rt.transactions.in_state(TransactionState.DISCARDED)]
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
        view = topic_view(rt, cfg)
        view["messages"] = sum(q["max_offset"] for q in view["queues"])
        view["rate"] = rates.rate(cfg.name, view["messages"], now)
        out.append(view)
    return {"topics": out}


def groups(rt: BrokerRuntime) -> dict[str, Any]:
    out = []
    for g in rt.delivery.groups():
        summary = group_summary(rt, g)
        if summary["topics"] and all(t.startswith(("RMQ_SYS_", "%")) for t in summary["topics"]):
            continue  # the broker's own readers of its bookkeeping topics
        summary["queues"] = [{"topic": topic, **asdict(q)} for topic, rows in rt.delivery.group_lag(g).items() for q in rows]
        summary["dlq"] = [message_view(m) for m in dead_letters.dead_letters(rt.store, g, 0, 50)]
        out.append(summary)
    return {"groups": out}


def producers(rt: BrokerRuntime) -> dict[str, Any]:
    return {"groups": [{"producer_group": g, "producers": [{"client_id": e.client_id, "check_url": e.check_url} for e in members]}
                       for g, members in sorted(rt.producers.groups().items())]}
