"""Retention on a real broker runtime (its store, services and pins), run by hand under a clock an hour ahead.

Every test but the first runs retention with the broker's pins minus ``state_records`` (the seam the lead switches
to the state snapshots' position): today that pin holds the state queue's first record, near offset 0, so with it
nothing goes at all (the first test). Each protection is shown by a segment that would go without its pin.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Mapping
from pathlib import Path

import pytest

from halfmq.broker.config import BrokerSettings
from halfmq.broker.runtime import BrokerRuntime
from halfmq.broker.store.retention import Pin, RetentionLimits
from halfmq.broker.store.retention_service import RetentionService
from halfmq.broker.store.topics import TIMER_QUEUE, TIMER_TOPIC
from halfmq.broker.store.verify import verify_store
from halfmq.wire import HalfSendRequest, OutgoingMessage, TransactionState

SCOPE = {"type": "http", "path": "/v1/transactions", "headers": []}
HOUR = 3600.0
SEGMENT = 4096


@pytest.fixture
async def rt(tmp_path: Path) -> AsyncIterator[BrokerRuntime]:
    runtime = BrokerRuntime.open(BrokerSettings(data_dir=tmp_path, grpc_port=0, segment_bytes=SEGMENT, consume_queue_entries=16))
    try:
        yield runtime
    finally:
        runtime.store.close()


def fill(rt: BrokerRuntime, segments: int = 6) -> None:
    """Plain messages until the log has rolled ``segments`` more segments."""
    target = rt.store.commit_log.segment_count + segments
    while rt.store.commit_log.segment_count < target:
        rt.sender.send("PLAIN", [OutgoingMessage(body="x" * 900)])


def pins(rt: BrokerRuntime, *without: str) -> Mapping[str, Pin]:
    return {name: pin for name, pin in rt.retention_pins().items() if name not in without}


def run_retention(rt: BrokerRuntime, pins: Mapping[str, Pin], ahead: float = HOUR) -> int:
    """One retention pass keeping one minute, as seen ``ahead`` seconds from now; the log start after it."""
    return RetentionService(rt.store, RetentionLimits(60_000, None), pins, clock=lambda: time.time() + ahead).run_once()


async def test_the_state_records_pin_holds_the_whole_log_while_a_restart_replays_every_state_record(rt: BrokerRuntime) -> None:
    fill(rt)
    first = rt.store.commit_log.segment_bases()
    assert rt.retention_pins()["state_records"]() is not None
    assert run_retention(rt, rt.retention_pins()) == 0
    assert rt.store.commit_log.segment_bases() == first


async def test_past_the_pins_whole_segments_go_and_the_queues_start_at_their_earliest_retained_offset(rt: BrokerRuntime, tmp_path: Path) -> None:
    fill(rt)
    ends = rt.store.reads.queue_range("PLAIN", 0)[1]
    start = run_retention(rt, pins(rt, "state_records"))
    assert start == rt.store.commit_log.segment_bases()[-1] > 0  # only the segment being written is left
    assert len(list((tmp_path / "commitlog").iterdir())) == 1
    low, high = rt.store.reads.queue_range("PLAIN", 0)
    assert high == ends and low > 0  # the queue keeps counting; it starts past what went
    assert all(m.commit_log_offset >= start for m in rt.store.reads.read_queue("PLAIN", 0, 0, 100))
    assert not rt.store.damaged.count


async def test_a_restart_after_retention_keeps_the_log_start_and_verify_reports_no_damage(rt: BrokerRuntime, tmp_path: Path) -> None:
    fill(rt)
    start = run_retention(rt, pins(rt, "state_records"))
    ranges = [rt.store.reads.queue_range("PLAIN", q) for q in range(4)]
    rt.store.close()
    report = verify_store(tmp_path, 16)
    assert not report.damaged, [str(f) for f in report.findings]
    again = BrokerRuntime.open(BrokerSettings(data_dir=tmp_path, grpc_port=0, segment_bytes=SEGMENT, consume_queue_entries=16))
    try:
        assert again.store.log_start.offset == start
        assert [again.store.reads.queue_range("PLAIN", q) for q in range(4)] == ranges
    finally:
        again.store.close()


async def test_verify_reports_the_first_segment_deleted_by_hand(rt: BrokerRuntime, tmp_path: Path) -> None:
    fill(rt)
    rt.store.close()
    min((tmp_path / "commitlog").iterdir()).unlink()
    report = verify_store(tmp_path, 16)
    assert report.damaged
    assert any("deleted by hand" in f.what for f in report.findings)


async def test_an_open_half_older_than_the_retention_still_commits_after_retention_ran(rt: BrokerRuntime) -> None:
    fill(rt, 3)
    who = rt.access.principal(SCOPE)
    half = HalfSendRequest(producer_group="shop", topic="ORDERS", message=OutgoingMessage(body="order 42"))
    answer = await rt.usecases.half_sending.send_half(who, SCOPE, half)
    fill(rt)
    start = run_retention(rt, pins(rt, "state_records"))
    tx = rt.half_messages.get(answer.transaction_id)
    assert 0 < start <= tx.half_clog_offset  # segments before the half's went; the half's stayed
    await rt.half_messages.end(answer.transaction_id, "shop", "commit", from_check=True)  # the check-back's answer
    assert rt.half_messages.get(answer.transaction_id).state is TransactionState.COMMITTED
    got = await rt.delivery.receive("billing", "ORDERS", 10, 30.0, 0.0)
    assert [d.message.body for d in got] == [b"order 42"]


async def test_an_open_producer_transactions_begin_record_is_kept(rt: BrokerRuntime) -> None:
    fill(rt, 3)
    init = await rt.producer_txns.init("payments-1", None, "anonymous")
    begun = rt.store.commit_log.end_offset  # where the begin record lands
    rt.producer_txns.begin("payments-1", init.producer_id, init.epoch, 0)
    fill(rt)
    start = run_retention(rt, pins(rt, "state_records"))
    assert 0 < start <= begun
    assert rt.store.reads.read_at(begun).properties  # a restart reads it, to abort the transaction


async def test_a_timer_due_after_the_retention_period_is_kept_and_still_released(rt: BrokerRuntime) -> None:
    fill(rt, 3)
    rt.sender.send("LATER", [OutgoingMessage(body="in two hours", delay_ms=int(2 * HOUR * 1000))])
    fill(rt)
    start = run_retention(rt, pins(rt, "state_records"))
    assert 0 < start <= rt.timers.lowest_needed_offset()
    due = rt.timers.due(int((time.time() + 3 * HOUR) * 1000), 10)
    assert len(due) == 1
    assert rt.store.reads.get(TIMER_TOPIC, TIMER_QUEUE, due[0][1]) is not None
    from halfmq.broker.timers.release_service import ReleaseService

    async def durable(offset: int) -> None:
        return None

    await ReleaseService(rt.store, rt.timers, durable, clock=lambda: time.time() + 3 * HOUR).release(due)
    got = await rt.delivery.receive("mail", "LATER", 10, 30.0, 0.0)
    assert [d.message.body for d in got] == [b"in two hours"]


async def test_a_group_behind_the_log_start_continues_from_the_earliest_retained_offset_and_the_skip_is_counted(rt: BrokerRuntime) -> None:
    rt.sender.send("PLAIN", [OutgoingMessage(body="first")])
    first = await rt.delivery.receive("late", "PLAIN", 32, 30.0, 0.0)
    assert rt.delivery.ack("late", "PLAIN", [d.receipt_handle for d in first])
    committed = {q: rt.store.offsets.get("late", "PLAIN", q) or 0 for q in range(4)}
    fill(rt)
    rt.sender.send("PLAIN", [OutgoingMessage(body="after") for _ in range(4)])
    run_retention(rt, pins(rt, "state_records"))
    earliest = {q: rt.store.reads.queue_range("PLAIN", q)[0] for q in range(4)}
    assert all(earliest[q] > committed[q] for q in range(4))
    got = []
    while batch := await rt.delivery.receive("late", "PLAIN", 32, 30.0, 0.0):
        got += batch
    assert {q: min(d.message.queue_offset for d in got if d.message.queue_id == q) for q in range(4)} == earliest
    skipped = sum(n for (event, group, topic, _), n in rt.delivery.counted.rows().items()
                  if (event, group, topic) == ("retention_skip", "late", "PLAIN"))
    assert skipped == sum(earliest[q] - committed[q] for q in range(4))
    assert sum(q.retention_skipped for q in rt.delivery.views.group_lag("late")["PLAIN"]) == skipped  # groups show, the console
    assert all(ok for _, ok in rt.delivery.ack("late", "PLAIN", [d.receipt_handle for d in got]))
    assert {q: rt.store.offsets.get("late", "PLAIN", q) for q in range(4)} == {
        q: rt.store.reads.queue_range("PLAIN", q)[1] for q in range(4)}  # committed moved over the gap: acks settle it
