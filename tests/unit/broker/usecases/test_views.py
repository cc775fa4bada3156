"""A page of dead letters (the console's and the CLI's) says which of how many it shows and where the pages before and after it start."""

from __future__ import annotations

from dataclasses import dataclass

from halfmq.broker.delivery.queue_progress import QueueLag
from halfmq.broker.store.record import StoredMessage
from halfmq.broker.store.topics import TopicConfig
from halfmq.broker.usecases.views import DLQ_PAGE, Views, dlq_page
from halfmq.wire import TransactionState
from tests.unit.broker.usecases.fakes import tx


def test_the_first_full_page_of_many_has_a_next_page_and_no_previous_one() -> None:
    page = dlq_page(0, list(range(DLQ_PAGE)), depth=120)
    assert (page.first, page.last, page.shown, page.depth) == (0, DLQ_PAGE - 1, DLQ_PAGE, 120)
    assert page.previous is None and page.next == DLQ_PAGE


def test_the_last_page_has_a_previous_page_and_no_next_one() -> None:
    page = dlq_page(100, list(range(100, 120)), depth=120)
    assert page.shown == 20 and page.previous == 50 and page.next is None


def test_a_full_page_that_ends_the_queue_has_no_next_page() -> None:
    assert dlq_page(70, list(range(70, 120)), depth=120).next is None


def test_a_page_past_the_end_shows_none_and_leads_back() -> None:
    page = dlq_page(500, [], depth=120)
    assert page.first is None and page.shown == 0 and page.next is None and page.previous == 450


# --- Views built from fakes ---------------------------------------------------------------------------------------


class FakeReads:
    """The store's reads: each queue of a topic holds offsets qid*10 .. qid*10+5; no DLQ topic."""

    @property
    def visible(self) -> FakeReads:
        return self

    def queue_range(self, topic: str, queue_id: int) -> tuple[int, int]:
        return queue_id * 10, queue_id * 10 + 5

    def topic(self, name: str) -> TopicConfig | None:
        return None


class FakeClockHalves:
    """The half messages' clock at 100 s; a transaction's half is read only when the caller has none."""

    def __init__(self) -> None:
        self.reads = 0

    def now(self) -> float:
        return 100.0

    def half_message(self, tx: object) -> StoredMessage:
        self.reads += 1
        return StoredMessage("ORDERS", 0, 0, 0, 0, 0, {"UNIQ_KEY": "m"}, b"x")


@dataclass
class FakeLag:
    def group_lag(self, group: str) -> dict[str, list[QueueLag]]:
        return {"ORDERS": [QueueLag(0, 3, 10, 7, 2), QueueLag(1, 0, 4, 4, 1)]}

    def retrying(self, group: str) -> int:
        return 1


def views() -> tuple[Views, FakeClockHalves]:
    halves = FakeClockHalves()
    return Views(halves, FakeReads(), FakeLag(), None, "sync"), halves  # type: ignore[arg-type]


def test_a_topic_view_shows_each_queue_with_its_visible_range() -> None:
    view = views()[0].topic_view(TopicConfig("ORDERS", 2, 0))
    assert [(q.queue_id, q.min_offset, q.max_offset) for q in view.queues] == [(0, 0, 5), (1, 10, 15)]


def test_a_transaction_view_is_aged_by_the_clock_and_only_a_pending_one_has_a_next_check() -> None:
    use_case, halves = views()
    pending = tx()
    pending.state, pending.born_ms, pending.due_at = TransactionState.PENDING, 40_000, 130.0
    view = use_case.tx_view(pending)
    assert view.age_seconds == 60.0 and view.next_check_timestamp == 130_000 and halves.reads == 1
    committed = tx()
    assert use_case.tx_view(committed, duplicate=True).next_check_timestamp is None


def test_a_group_summary_adds_its_queues_lag_and_in_flight_deliveries() -> None:
    summary = views()[0].group_summary("G")
    assert (summary.topics, summary.lag, summary.in_flight, summary.retrying, summary.dlq_depth) == (["ORDERS"], 11, 3, 1, 0)

