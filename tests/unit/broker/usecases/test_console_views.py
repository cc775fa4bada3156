"""A console page of a listing: which rows it shows and which pages come before and after it, whatever it was asked for."""

from __future__ import annotations

from halfmq.broker.usecases.console_views import page_span


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
