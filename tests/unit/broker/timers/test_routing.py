"""routing.route: where a message goes when it becomes visible, under a fake clock (plain numbers)."""

from __future__ import annotations

import pytest

from halfmq.broker.store.message_store import PutItem
from halfmq.broker.store.topics import REAL_QID, REAL_TOPIC, TIMER_OUT_MS, TIMER_TOPIC
from halfmq.broker.timers.routing import TIMER_DELAY_MS, TIMER_DELIVER_MS, requested, route, visible_place
from halfmq.errors import InvalidDeliveryTime

NOW = 1_800_000_000_000
DAY = 24 * 3600 * 1000


def item(**props: str) -> PutItem:
    return PutItem("ORDERS", 3, b"body", {"UNIQ_KEY": "u1", **props}, tag="t")


def test_a_message_without_a_timer_is_written_to_its_topic_unchanged() -> None:
    plain = item()
    assert route(plain, NOW, DAY) is plain


def test_a_delay_goes_to_the_timer_queue_due_relative_to_the_moment_it_becomes_visible() -> None:
    timed = route(item(**{TIMER_DELAY_MS: "30000"}), NOW, DAY)
    assert (timed.topic, timed.queue_id) == (TIMER_TOPIC, 0)
    assert timed.properties == {"UNIQ_KEY": "u1", REAL_TOPIC: "ORDERS", REAL_QID: "3", TIMER_OUT_MS: str(NOW + 30_000)}
    assert (timed.body, timed.tag) == (b"body", "t")


def test_a_deliver_at_is_due_at_that_time_whenever_it_becomes_visible() -> None:
    timed = route(item(**{TIMER_DELIVER_MS: str(NOW + 5_000)}), NOW + 1_000, DAY)
    assert timed.properties[TIMER_OUT_MS] == str(NOW + 5_000)


@pytest.mark.parametrize("props", [{TIMER_DELIVER_MS: str(NOW)}, {TIMER_DELIVER_MS: str(NOW - 1)}, {TIMER_DELAY_MS: "0"}])
def test_a_due_time_in_the_past_is_written_to_its_topic_at_once(props: dict[str, str]) -> None:
    now = route(item(**props), NOW, DAY)
    assert (now.topic, now.queue_id, now.properties) == ("ORDERS", 3, {"UNIQ_KEY": "u1"})


def test_a_due_time_past_the_maximum_delay_is_an_invalid_delivery_time() -> None:
    with pytest.raises(InvalidDeliveryTime):
        route(item(**{TIMER_DELAY_MS: str(DAY + 1)}), NOW, DAY)
    assert route(item(**{TIMER_DELAY_MS: str(DAY)}), NOW, DAY).topic == TIMER_TOPIC


def test_a_commit_passes_no_maximum_because_the_send_checked_it() -> None:
    assert route(item(**{TIMER_DELIVER_MS: str(NOW + 2 * DAY)}), NOW, None).topic == TIMER_TOPIC


def test_the_fields_of_a_send_become_one_property_and_both_at_once_are_refused() -> None:
    assert requested(None, None, NOW, DAY) == {}
    assert requested(NOW + 10, None, NOW, DAY) == {TIMER_DELIVER_MS: str(NOW + 10)}
    assert requested(None, 10, NOW, DAY) == {TIMER_DELAY_MS: "10"}
    with pytest.raises(InvalidDeliveryTime):
        requested(NOW + 10, 10, NOW, DAY)
    with pytest.raises(InvalidDeliveryTime):
        requested(NOW + DAY + 1, None, NOW, DAY)


def test_a_timer_answers_its_real_topic_and_queue_and_its_due_time() -> None:
    timed = route(item(**{TIMER_DELAY_MS: "100"}), NOW, DAY)
    assert visible_place(timed.topic, timed.queue_id, 17, timed.properties) == ("ORDERS", 3, -1, NOW + 100)
    assert visible_place("ORDERS", 3, 17, {}) == ("ORDERS", 3, 17, None)
