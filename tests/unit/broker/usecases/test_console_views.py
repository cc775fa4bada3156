"""A console page of a listing: which rows it shows and which pages come before and after it, whatever it was asked for."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from halfmq import wire
from halfmq.broker.delivery.dlq_redrive import Redrives
from halfmq.broker.half_messages.half_records import Tx
from halfmq.broker.store.topics import TopicConfig
from halfmq.broker.usecases.console_views import ConsoleViews, Rates, page_span
from halfmq.wire import TransactionState
from tests.unit.broker.usecases.fakes import tx


def test_the_first_page_of_many_shows_the_first_rows_and_leads_on() -> None:
    span = page_span(2000, 1, 25)
    assert (span.start, span.stop, span.pages, span.previous, span.next) == (0, 25, 80, None, 2)
    assert list(span.of(range(2000))) == list(range(25))


def test_the_last_page_holds_the_remainder_and_leads_back() -> None:
    span = page_span(60, 3, 25)
    assert (span.start, span.stop, span.previous, span.next) == (50, 60, 2, None)


def test_a_page_past_the_last_is_the_last_and_one_below_the_first_is_the_first() -> None:
    assert page_span(60, 99, 25).number == 3
    assert page_span(60, 0, 25).number == 1


def test_an_empty_listing_has_one_empty_page() -> None:
    span = page_span(0, 5, 25)
    assert (span.number, span.pages, span.start, span.stop, span.previous, span.next) == (1, 1, 0, 0, None, None)


# --- ConsoleViews built from fakes --------------------------------------------------------------------------------

ADMIN: Any = object()  # the console's session (a ClusterAdmin grant: checked by the front before a page is read)


class CountingViews:
    """``Views``: each view built is counted, so a test sees that only the page's rows were read."""

    def __init__(self) -> None:
        self.built: list[str] = []

    def topic_view(self, cfg: TopicConfig) -> wire.TopicInfo:
        self.built.append(cfg.name)
        return wire.TopicInfo(name=cfg.name, queues=[wire.QueueInfo(queue_id=0, min_offset=0, max_offset=7)])

    def tx_view(self, t: Tx) -> dict[str, Any]:
        self.built.append(t.transaction_id)
        return {"transaction_id": t.transaction_id, "check_times": t.check_times, "age_seconds": 10.0}


class FakeHalves:
    def __init__(self, pending: list[Tx]) -> None:
        self._pending = pending

    def pending(self) -> list[Tx]:
        return self._pending

    def in_state(self, state: TransactionState) -> list[Tx]:
        return []


class FakeTopicReads:
    def __init__(self, names: list[str]) -> None:
        self.names = names

    @property
    def topics(self) -> FakeTopicReads:
        return self

    def all(self) -> list[TopicConfig]:
        return [TopicConfig(n, 1, 0) for n in self.names]


def console(views: CountingViews, pending: Sequence[Tx] = (), topics: Sequence[str] = ()) -> ConsoleViews:
    return ConsoleViews(views, FakeHalves(list(pending)), None, FakeTopicReads(list(topics)), None, None, Redrives(1),  # type: ignore[arg-type]
                        30.0, "127.0.0.1", 0)


def test_a_transactions_page_reads_only_its_rows_and_marks_the_checked_ones_hanging() -> None:
    checked = tx("tx-2")
    checked.check_times = 1
    views = CountingViews()
    page = console(views, pending=[tx("tx-1"), checked, tx("tx-3")]).transactions(ADMIN, 1, 2)
    assert views.built == ["tx-1", "tx-2"]
    assert [(t["transaction_id"], t["hanging"]) for t in page["pending"]] == [("tx-1", False), ("tx-2", True)]
    assert page["pending_count"] == 3 and page["pager"]["next"] == 2


def test_a_topics_page_reads_only_the_topics_it_shows_narrowed_by_name() -> None:
    views = CountingViews()
    page = console(views, topics=["ORDERS", "PAYMENTS", "ORDERS-DLQ-LIKE", "SHIPPING"]).topics(ADMIN, Rates(), 1, 1, q="ORDERS")
    assert views.built == ["ORDERS"]
    assert [t["name"] for t in page["topics"]] == ["ORDERS"] and page["topics"][0]["messages"] == 7
    assert page["pager"]["count"] == 2

