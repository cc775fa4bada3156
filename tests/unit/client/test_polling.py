"""A consumer loop's settings are checked once for both flavours, and its backoff after failed polls."""

from __future__ import annotations

from typing import Any

import pytest

from halfmq import AsyncConsumer, Consumer
from halfmq.client.polling import PollFailures, PollSettings, prefetch_next
from halfmq.errors import BrokerUnavailable

CLOSED = "http://127.0.0.1:9"


@pytest.mark.parametrize("consumer", [Consumer, AsyncConsumer])
@pytest.mark.parametrize(("setting", "value"), [("concurrency", 0), ("max_messages", 0), ("wait_seconds", -1.0)])
def test_a_setting_out_of_range_is_refused_at_construction_by_either_consumer(consumer: Any, setting: str, value: Any) -> None:
    with pytest.raises(ValueError, match=setting):
        consumer(CLOSED, "g", "T", lambda message: None, **{setting: value})


def test_settings_within_the_brokers_bounds_are_kept_as_given() -> None:
    settings = PollSettings(max_messages=16, invisible_seconds=30.0, wait_seconds=10.0, concurrency=4)
    assert (settings.max_messages, settings.invisible_seconds, settings.wait_seconds, settings.concurrency) == (16, 30.0, 10.0, 4)


def test_the_wait_after_failed_polls_grows_and_starts_over_after_a_success() -> None:
    failures = PollFailures("T")
    first = failures.failed(BrokerUnavailable("down"))
    for _ in range(3):
        fourth = failures.failed(BrokerUnavailable("down"))
    assert 0.05 <= first <= 0.1 and 0.4 <= fourth <= 0.8
    failures.succeeded()
    assert 0.05 <= failures.failed(BrokerUnavailable("down")) <= 0.1


def test_the_first_batch_is_not_prefetched_behind_since_its_pace_is_unknown() -> None:
    assert prefetch_next(None, 30.0) is False


def test_quick_batches_have_the_next_receive_in_flight_while_they_are_handled() -> None:
    assert prefetch_next(0.002, 30.0) is True
    assert prefetch_next(7.5, 30.0) is True  # exactly a quarter of the invisibility


def test_slow_batches_are_not_prefetched_behind_so_waiting_messages_do_not_outlive_their_invisibility() -> None:
    assert prefetch_next(7.6, 30.0) is False
    assert prefetch_next(20.0, 30.0) is False
