"""Disk watermarks on a real broker runtime (its store, use cases and pins), the filesystem reading faked.

Past the refuse-sends mark every way a new message comes in is refused and stores nothing, while receives, acks and
transaction ends go on; under it again, sends resume with no restart. Past the early-delete mark retention deletes the
oldest segments before their time, but never one a pin holds.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from halfmq.broker.config import BrokerSettings
from halfmq.broker.runtime import BrokerRuntime
from halfmq.broker.store.disk_watermarks import DiskLevel, DiskUsage
from halfmq.broker.store.retention import RetentionLimits
from halfmq.broker.store.retention_service import RetentionService
from halfmq.errors import DiskAlmostFull
from halfmq.wire import BeginTxnRequest, HalfSendRequest, OutgoingMessage, SendRequest, TransactionState, TxnMessage, TxnMessagesRequest

SCOPE = {"type": "http", "path": "/v1/topics/ORDERS/messages", "headers": []}
SEGMENT = 4096
WEEK_MS = 7 * 86_400_000


class FakeDisk:
    """The data dir's filesystem, as full as ``ratio`` says (of a 1 GB disk)."""

    def __init__(self, ratio: float) -> None:
        self.ratio = ratio

    def __call__(self) -> DiskUsage:
        used = int(self.ratio * 10**9)
        return DiskUsage(used=used, free=10**9 - used)


@pytest.fixture
async def rt(tmp_path: Path) -> AsyncIterator[BrokerRuntime]:
    runtime = BrokerRuntime.open(BrokerSettings(data_dir=tmp_path, grpc_port=0, segment_bytes=SEGMENT, consume_queue_entries=16))
    try:
        yield runtime
    finally:
        runtime.store.close()


def disk_at(rt: BrokerRuntime, ratio: float) -> DiskLevel:
    assert rt.disk is not None
    rt.disk.reader = FakeDisk(ratio)
    return rt.disk.read()


async def send(rt: BrokerRuntime, topic: str, body: str) -> None:
    who = rt.access.principal(SCOPE)
    await rt.usecases.sending.send(rt.access.publisher(who, SCOPE, topic), SendRequest(messages=[OutgoingMessage(body=body)]))


async def test_past_the_refuse_sends_mark_a_send_is_refused_with_retry_after_and_nothing_is_stored(rt: BrokerRuntime) -> None:
    await send(rt, "ORDERS", "before")
    end = rt.store.commit_log.end_offset
    assert disk_at(rt, 0.95) is DiskLevel.REFUSE_SENDS
    with pytest.raises(DiskAlmostFull) as refused:
        await send(rt, "ORDERS", "refused")
    assert refused.value.status == 503 and refused.value.retry_after and refused.value.code == "DISK_ALMOST_FULL"
    with pytest.raises(DiskAlmostFull):
        await send(rt, "NEW_TOPIC", "refused")
    assert rt.store.commit_log.end_offset == end and rt.store.topic("NEW_TOPIC") is None
    assert rt.disk is not None and rt.disk.refused_sends == 2


async def test_past_the_refuse_sends_mark_halves_and_producer_transactions_messages_are_refused_too(rt: BrokerRuntime) -> None:
    who = rt.access.principal(SCOPE)
    init = await rt.usecases.producer_transactions.init(who, SCOPE, "payments-1", None)
    actor = rt.access.transactional_id_actor(who, SCOPE, "payments-1")
    rt.usecases.producer_transactions.begin(actor, BeginTxnRequest(producer_id=init.producer_id, epoch=init.epoch, sequence=0))
    disk_at(rt, 0.95)
    with pytest.raises(DiskAlmostFull):
        await rt.usecases.half_sending.send_half(who, SCOPE, HalfSendRequest(producer_group="shop", topic="ORDERS",
                                                                             message=OutgoingMessage(body="order 1")))
    with pytest.raises(DiskAlmostFull):
        rt.usecases.producer_transactions.add_messages(actor, TxnMessagesRequest(
            producer_id=init.producer_id, epoch=init.epoch, sequence=1, messages=[TxnMessage(body="x", topic="PAID")]))
    assert rt.half_messages.pending() == [] and rt.store.topic("PAID") is None


async def test_past_the_refuse_sends_mark_receives_acks_and_transaction_ends_go_on_and_sends_resume_under_it(rt: BrokerRuntime) -> None:
    who = rt.access.principal(SCOPE)
    await send(rt, "ORDERS", "sent before")
    half = await rt.usecases.half_sending.send_half(who, SCOPE, HalfSendRequest(producer_group="shop", topic="ORDERS",
                                                                                message=OutgoingMessage(body="order 42")))
    disk_at(rt, 0.99)
    got = await rt.delivery.receive("billing", "ORDERS", 10, 30.0, 0.0)
    assert [d.message.body for d in got] == [b"sent before"]
    assert all(ok for _, ok in rt.delivery.ack("billing", "ORDERS", [d.receipt_handle for d in got]))
    await rt.half_messages.end(half.transaction_id, "shop", "commit")
    assert rt.half_messages.get(half.transaction_id).state is TransactionState.COMMITTED
    assert [d.message.body for d in await rt.delivery.receive("billing", "ORDERS", 10, 30.0, 0.0)] == [b"order 42"]
    assert disk_at(rt, 0.50) is DiskLevel.OK  # space is back: the next reading lets sends in, no restart
    await send(rt, "ORDERS", "after")
    assert [d.message.body for d in await rt.delivery.receive("billing", "ORDERS", 10, 30.0, 0.0)] == [b"after"]


def fill(rt: BrokerRuntime, segments: int) -> None:
    target = rt.store.commit_log.segment_count + segments
    while rt.store.commit_log.segment_count < target:
        rt.sender.send("PLAIN", [OutgoingMessage(body="x" * 900)])


def early_retention(rt: BrokerRuntime) -> RetentionService:
    """A retention of a week (nothing is due) fed by the runtime's disk, with the pins but ``state_records`` (the
    broker's own pins hold the whole log until the first state snapshot: test_runtime_retention.py)."""
    pins = {name: pin for name, pin in rt.retention_pins().items() if name != "state_records"}
    assert rt.disk is not None
    return RetentionService(rt.store, RetentionLimits(WEEK_MS, None), pins, reclaim=lambda: rt.disk.reclaim_bytes if rt.disk else 0)


async def test_under_the_early_delete_mark_a_week_long_retention_deletes_nothing(rt: BrokerRuntime) -> None:
    fill(rt, 4)
    disk_at(rt, 0.50)
    retention = early_retention(rt)
    assert retention.run_once() == 0 and retention.early_deleted_files == 0


async def test_past_the_early_delete_mark_the_oldest_segments_go_before_their_time(rt: BrokerRuntime) -> None:
    fill(rt, 4)
    disk_at(rt, 0.80)  # 50 MB over the mark: more than the whole log, so all but the segment being written goes
    retention = early_retention(rt)
    start = retention.run_once()
    assert start == rt.store.commit_log.segment_bases()[-1] > 0
    assert retention.early_deleted_files > 0 and retention.deleted_files == retention.early_deleted_files


async def test_past_the_early_delete_mark_an_open_half_still_holds_its_segment_and_commits(rt: BrokerRuntime) -> None:
    fill(rt, 2)
    who = rt.access.principal(SCOPE)
    half = await rt.usecases.half_sending.send_half(who, SCOPE, HalfSendRequest(producer_group="shop", topic="ORDERS",
                                                                                message=OutgoingMessage(body="order 7")))
    fill(rt, 3)
    disk_at(rt, 0.99)
    start = early_retention(rt).run_once()
    assert 0 < start <= rt.half_messages.get(half.transaction_id).half_clog_offset
    await rt.half_messages.end(half.transaction_id, "shop", "commit", from_check=True)
    assert [d.message.body for d in await rt.delivery.receive("billing", "ORDERS", 10, 30.0, 0.0)] == [b"order 7"]


async def test_past_the_early_delete_mark_a_pending_timer_is_kept(rt: BrokerRuntime) -> None:
    fill(rt, 2)
    rt.sender.send("LATER", [OutgoingMessage(body="in a day", delay_ms=86_400_000)])
    fill(rt, 3)
    disk_at(rt, 0.80)
    start = early_retention(rt).run_once()
    assert 0 < start <= rt.timers.lowest_needed_offset()
    assert rt.timers.pending == 1
