"""`halfmq admin` tables fit a terminal: nothing cut to "…" at 80 columns, times said as a person says them,
`groups show` and `groups lag` tell different things, and a DLQ page says which of how many it shows."""

from __future__ import annotations

import time

import msgspec
from rich.console import Console

from cli.admin import tables
from halfmq.broker.usecases.views import dlq_page


def _text(renderable: object, width: int = 80) -> str:
    console = Console(record=True, width=width, color_system=None)
    console.print(renderable)
    return console.export_text()


def _transaction(i: int) -> dict:
    return {"transaction_id": f"7f9c2e1a-4b3d-4e5f-9a8b-0c1d2e3f4a{i:02d}", "producer_group": "order_service_producers",
            "message": {"topic": "ORDER_TOPIC_WITH_A_LONG_NAME"}, "age_seconds": 250.0, "check_times": 3,
            "last_answer": "UNKNOWN", "next_check_timestamp": int((time.time() - 5) * 1000)}


def test_a_transaction_list_at_80_columns_folds_its_cells_and_cuts_none_to_an_ellipsis() -> None:
    text = _text(tables.transactions({"count": 2, "state": "pending", "transactions": [_transaction(1), _transaction(2)]}))
    assert "…" not in text
    assert "7f9c2e1a-4b3d-4e5f-9a8b-0c1d2e3f4a01" in text  # the id is copied whole
    assert max(len(line) for line in text.splitlines()) <= 80


def test_a_check_that_is_due_says_due_now_and_an_age_is_in_minutes() -> None:
    text = _text(tables.transactions({"count": 1, "state": "pending", "transactions": [_transaction(1)]}), width=200)
    assert "due now" in text and "4 min" in text and "ago" not in text


def test_json_keeps_the_epoch_milliseconds_and_adds_an_iso_twin_of_each() -> None:
    answer = {"next_check_timestamp": 1_800_000_000_123, "nested": [{"store_timestamp": 1_800_000_001_000}],
              "last_failover": {"timestamp": 1_800_000_000_000}, "check_times": 3, "last_check_timestamp": None}
    shown = tables.with_iso_times(answer)
    assert shown["next_check_timestamp"] == 1_800_000_000_123
    assert shown["next_check_at"] == "2027-01-15T08:00:00.123Z"
    assert shown["nested"][0]["store_at"] == "2027-01-15T08:00:01.000Z"
    assert shown["last_failover"]["at"] == "2027-01-15T08:00:00.000Z"
    assert "last_check_at" not in shown and shown["check_times"] == 3


GROUP = {"group": "billing", "topics": [{"topic": "PAYMENTS", "queues": [
    {"queue_id": 0, "committed_offset": 5, "max_offset": 9, "lag": 4, "in_flight": 1},
    {"queue_id": 1, "committed_offset": 2, "max_offset": 2, "lag": 0, "in_flight": 0}]}]}


def test_groups_show_is_the_group_as_a_whole_and_groups_lag_is_one_row_per_queue() -> None:
    summary = {"group": "billing", "topics": ["PAYMENTS"], "lag": 4, "in_flight": 1, "retrying": 2, "dlq_depth": 3}
    shown = _text(tables.group({"summary": summary, **GROUP}), width=120)
    lag = _text(tables.group_lag(GROUP), width=120)
    assert "group billing: lag 4, in flight 1, retrying 2, DLQ depth 3" in shown
    assert [line.split("│")[1].strip() for line in shown.splitlines() if line.startswith("│")] == ["PAYMENTS"]
    assert [line.split("│")[2].strip() for line in lag.splitlines() if line.startswith("│")] == ["0", "1"]
    assert shown != lag


def _dead_letter(offset: int) -> dict:
    return {"queue_offset": offset, "msg_id": f"m{offset}", "store_timestamp": int((time.time() - 30) * 1000),
            "properties": {"REAL_TOPIC": "ORDERS", "RECONSUME_TIME": "16", "DLQ_REASON": "17 deliveries, none acked; the last was nacked"},
            "body": "x"}


def _dlq(depth: int, offsets: range) -> dict:
    """A DLQ answer as the broker gives it, its page described by the broker's own function."""
    page = msgspec.to_builtins(dlq_page(offsets.start, list(offsets), depth))
    return {"group": "billing", "depth": depth, "messages": [_dead_letter(i) for i in offsets], "page": page}


def test_a_dlq_page_says_which_of_how_many_where_the_next_page_starts_and_when_each_arrived() -> None:
    text = _text(tables.dlq(_dlq(120, range(50))), width=160)
    assert "offsets 0–49, 50 of 120 (next page: --offset 50)" in text
    assert "30 s ago" in text or "31 s ago" in text
    assert "the last was nacked" in " ".join(text.split())
    last = _text(tables.dlq(_dlq(120, range(100, 120))), width=160)
    assert "20 of 120" in last and "next page" not in last
    assert "none here, 0 in all" in _text(tables.dlq(_dlq(0, range(0))))


def _long_named(now_ms: int) -> list[tuple[object, list[str]]]:
    """Listings with the names a real deployment has, and the names each must show whole."""
    producers = {"groups": [{"producer_group": "order_service_producer_group_eu_west", "producers": [
        {"client_id": "orders-7f9c2e1a-4b3d-4e5f", "check_url": "http://orders.eu-west.internal:8001/check",
         "last_heartbeat_timestamp": now_ms}]}]}
    groups = {"groups": [{"group": "payments_settlement_consumer_group", "topics": ["ORDER_PAYMENT_CAPTURED", "ORDER_PAYMENT_REFUNDED"],
                          "lag": 12, "in_flight": 3, "retrying": 1, "dlq_depth": 0}]}
    return [(tables.producers(producers), ["producer group", "order_service_producer_group_eu_west", "orders-7f9c2e1a-4b3d-4e5f",
                                           "http://orders.eu-west.internal:8001/check", "last heartbeat"]),
            (tables.groups(groups), ["payments_settlement_consumer_group", "ORDER_PAYMENT_CAPTURED", "ORDER_PAYMENT_REFUNDED", "dlq depth"])]


def test_long_names_at_80_columns_are_whole_on_one_line_never_folded_into_stubs() -> None:
    for listing, names in _long_named(int(time.time() * 1000)):
        text = _text(listing)
        lines = text.splitlines()
        assert max(len(line) for line in lines) <= 80
        for name in names:  # each on one line, whole (folded into `prod/ucer/grou/p` it is on none)
            assert any(name in line for line in lines), f"{name!r} is not whole in:\n{text}"


def test_a_listing_that_fits_stays_a_table_with_one_line_per_row() -> None:
    text = _text(tables.topics({"topics": [{"name": "ORDERS", "queues": [{"queue_id": 0, "min_offset": 0, "max_offset": 5}]},
                                           {"name": "PAYMENTS", "queues": []}]}))
    assert [line.split("│")[1].strip() for line in text.splitlines() if line.startswith("│")] == ["ORDERS", "PAYMENTS"]
