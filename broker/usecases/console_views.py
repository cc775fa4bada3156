"""What each console page shows, read from the runtime (the same views the JSON routes answer with).

Who may: the console's session, a cluster admin (``operator_actions.cluster_admin``), checked before any page is read.

Every listing is one page of ``rows`` (``console_page_rows``), chosen by cheap facts (names, list positions) before
anything per row is read: a page polled every 2 s costs the same whether the broker has 10 topics or 10,000
(DESIGN section 16). ``q`` narrows the topics and groups to names that contain it.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, TypeVar

import msgspec

from halfmq.broker.delivery.dlq_redrive import Redrives
from halfmq.broker.messages.view import message_view
from halfmq.broker.security.access import ClusterAdmin
from halfmq.broker.store.disk_watermarks import DiskLevel, DiskWatch
from halfmq.broker.store.topics import is_system_group, is_system_topic
from halfmq.broker.usecases.answers import view_answer
from halfmq.wire import TransactionState

from .groups import redrive_view
from .ports import GroupProgress, HalfMessages, Registry, StoreReads
from .producer_txns import Coordinator
from .views import DLQ_PAGE, Views, dlq_page

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class PageSpan:
    """Which rows one page of a listing shows: ``start:stop`` of ``count``, page ``number`` of ``pages`` (from 1)."""

    number: int
    pages: int
    start: int
    stop: int
    count: int

    @property
    def previous(self) -> int | None:
        return self.number - 1 if self.number > 1 else None

    @property
    def next(self) -> int | None:
        return self.number + 1 if self.number < self.pages else None

    def of(self, items: Sequence[T]) -> Sequence[T]:
        return items[self.start:self.stop]


def page_span(count: int, number: int, rows: int) -> PageSpan:
    """Page ``number`` of a listing of ``count`` items, ``rows`` a page; a number below 1 is the first page, past the last the last."""
    pages = max(1, -(-count // rows))
    number = min(max(number, 1), pages)
    start = (number - 1) * rows
    return PageSpan(number, pages, start, min(start + rows, count), count)


def _pager(span: PageSpan) -> dict[str, Any]:
    return {"number": span.number, "pages": span.pages, "first": span.start + 1 if span.count else 0, "last": span.stop,
            "count": span.count, "previous": span.previous, "next": span.next}


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


@dataclass(eq=False)  # a use case, compared by identity
class ConsoleViews:
    views: Views
    half_messages: HalfMessages
    coordinator: Coordinator
    store: StoreReads
    deliveries: GroupProgress
    registry: Registry
    redrives: Redrives
    transaction_timeout: float
    host: str
    port: int
    disk_watch: DiskWatch | None = None

    def disk(self, admin: ClusterAdmin) -> dict[str, Any] | None:
        """The data dir's disk against its watermarks, for every page's header (None before the first reading): the
        operator sees why sends are refused or old messages went early (docs/decisions/053-disk-watermarks.md)."""
        watch = self.disk_watch
        if watch is None or watch.usage is None:
            return None
        says = {DiskLevel.OK: "", DiskLevel.EARLY_DELETE: "past the early-delete mark: retention deletes the oldest segments early",
                DiskLevel.REFUSE_SENDS: "past the refuse-sends mark: sends are refused (DISK_ALMOST_FULL); receives, acks and ends go on"}
        return {"level": watch.level.name.lower(), "used": f"{watch.used_ratio:.1%}", "says": says[watch.level],
                "early_delete": f"{watch.marks.early_delete_ratio:.0%}", "refuse_sends": f"{watch.marks.refuse_sends_ratio:.0%}"}

    def transactions(self, admin: ClusterAdmin, page: int, rows: int) -> dict[str, Any]:
        """One page of the pending transactions and one of the discarded ones (the same page number), oldest first."""
        all_pending = self.half_messages.pending()
        all_discarded = self.half_messages.in_state(TransactionState.DISCARDED)
        span = page_span(max(len(all_pending), len(all_discarded)), page, rows)
        pending = [msgspec.to_builtins(self.views.tx_view(tx)) for tx in span.of(all_pending)]  # dicts: the page adds its own keys
        for t in pending:  # checked at least once and still undecided: the producer does not know either
            t["hanging"] = t["check_times"] > 0 or t["age_seconds"] > self.transaction_timeout
        discarded = [msgspec.to_builtins(self.views.tx_view(tx)) for tx in span.of(all_discarded)]
        return {"pending": pending, "discarded": discarded, "pending_count": len(all_pending), "discarded_count": len(all_discarded),
                "pager": _pager(span)}

    def transactional_ids(self, admin: ClusterAdmin, page: int, rows: int) -> dict[str, Any]:
        txns = self.coordinator.all()
        span = page_span(len(txns), page, rows)
        return {"ids": [view_answer(self.coordinator.view(t)) for t in span.of(txns)], "pager": _pager(span)}

    def topics(self, admin: ClusterAdmin, rates: Rates, page: int, rows: int, q: str = "") -> dict[str, Any]:
        now = time.monotonic()
        configs = [cfg for cfg in self.store.topics.all() if q in cfg.name]
        span = page_span(len(configs), page, rows)
        out = []
        for cfg in span.of(configs):
            view = msgspec.to_builtins(self.views.topic_view(cfg))  # a dict: the page adds its own keys
            view["messages"] = sum(queue["max_offset"] for queue in view["queues"])
            view["rate"] = rates.rate(cfg.name, view["messages"], now)
            view["system"] = is_system_topic(cfg.name)  # the broker's own: not deleted from here
            out.append(view)
        return {"topics": out, "pager": _pager(span), "q": q}

    def groups(self, admin: ClusterAdmin, page: int, rows: int, q: str = "", dlq_offsets: Mapping[str, int] | None = None) -> dict[str, Any]:
        """One page of the consumer groups (by name) with their queues; the broker's own groups left out.

        Dead letters are read for at most ``DLQ_PAGE`` messages a page, whatever the number of groups on it: the group asked
        for (``dlq_offsets``, from its offset) first, then the others in page order, from their oldest; a group past that
        shows its DLQ's depth and a link to its dead letters."""
        names = [g for g in self.deliveries.groups() if q in g and not is_system_group(g)]
        span = page_span(len(names), page, rows)
        summaries = {g: msgspec.to_builtins(self.views.group_summary(g)) for g in span.of(names)}  # dicts: the page adds its own keys
        budget = DLQ_PAGE
        for g in sorted(summaries, key=lambda g: g not in (dlq_offsets or {})):
            summary = summaries[g]
            summary["queues"] = [{"topic": topic, **asdict(lag)} for topic, lags in self.deliveries.group_lag(g).items() for lag in lags]
            start = (dlq_offsets or {}).get(g, 0)
            asked = budget if summary["dlq_depth"] else 0
            listed = self.views.dead_letters(g, start, asked) if asked else []
            budget -= len(listed)
            summary["dlq"] = [message_view(m) for m in listed]
            summary["dlq_listed"] = bool(asked) or start > 0  # else: a link to them
            job = self.redrives.find(g)
            summary["redrive"] = msgspec.to_builtins(redrive_view(job)) if job is not None else None
            summary["dlq_page"] = msgspec.to_builtins(dlq_page(start, [m.queue_offset for m in summary["dlq"]], summary["dlq_depth"],
                                                               max(asked, 1)))
        return {"groups": list(summaries.values()), "pager": _pager(span), "q": q}

    def producers(self, admin: ClusterAdmin, page: int, rows: int) -> dict[str, Any]:
        names = self.registry.group_names()
        span = page_span(len(names), page, rows)
        return {"groups": self.views.producer_groups(span.of(names)), "pager": _pager(span)}

    def single_node(self, admin: ClusterAdmin) -> dict[str, Any]:
        """The broker-set page of a broker that is not in a set: this one node."""
        store = self.store
        return {"single": True, "cluster": {"mode": "single node", "nodes": [{
            "node_id": None, "url": f"http://{self.host}:{self.port}", "role": "single node (leader of itself)",
            "log_end": store.commit_log.end_offset, "durable_offset": store.flushed_offset}]}}
