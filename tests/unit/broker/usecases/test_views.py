"""A page of dead letters (the console's and the CLI's) says which of how many it shows and where the pages before and after it start."""

from __future__ import annotations

from halfmq.broker.usecases.views import DLQ_PAGE, dlq_page


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
