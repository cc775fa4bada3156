"""Connected producers by group: pushes go round robin and stop when a stream closes; an outbox is bounded."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("rocketmq.grpc_protocol")

from rocketmq.grpc_protocol import definition_pb2 as pb
from rocketmq.grpc_protocol import service_pb2 as spb

from halfmq.broker.grpc_front.telemetry_sessions import Outbox, Session, TelemetrySessions


async def test_checks_go_round_robin_over_the_groups_streams_and_stop_when_they_close() -> None:
    sessions = TelemetrySessions()
    a, b = Session("a"), Session("b")
    sessions.publishes(a, ["orders"])
    sessions.publishes(b, ["orders", "other"])
    assert sessions.push_check("orders", "t1", pb.Message())
    assert sessions.push_check("orders", "t2", pb.Message())
    got = sorted((s.client_id, s.outbox.get_nowait().recover_orphaned_transaction_command.transaction_id) for s in (a, b))
    assert got == [("a", "t1"), ("b", "t2")]
    sessions.close(a)
    sessions.close(b)
    assert not sessions.connected("orders") and not sessions.connected("other")
    assert not sessions.push_check("orders", "t3", pb.Message())


def _settings(topics: int = 1) -> spb.TelemetryCommand:
    return spb.TelemetryCommand(settings=pb.Settings(publishing=pb.Publishing(topics=[pb.Resource(name=f"t{i}") for i in range(topics)])))


async def test_an_outbox_refuses_the_command_past_its_bound_drops_what_it_held_and_ends() -> None:
    outbox = Outbox(max_commands=3)
    assert all(outbox.put(_settings()) for _ in range(3))
    assert not outbox.put(_settings())
    assert outbox.overflowed and len(outbox) == 0 and outbox.bytes == 0
    assert await outbox.get() is None  # the stream's writer ends at once, without writing what was queued
    assert not outbox.put(_settings())


async def test_an_outbox_is_bounded_by_bytes_but_always_takes_one_command() -> None:
    big = _settings(100)
    outbox = Outbox(max_commands=100, max_bytes=big.ByteSize() // 2)
    assert outbox.put(big)  # alone, however large
    assert not outbox.put(_settings())
    assert outbox.overflowed


async def test_a_finished_outbox_still_hands_out_what_it_holds_then_ends() -> None:
    outbox = Outbox(max_commands=2)
    outbox.put(_settings(1))
    outbox.put(_settings(2))
    outbox.finish()
    assert len((await outbox.get()).settings.publishing.topics) == 1
    assert len((await outbox.get()).settings.publishing.topics) == 2
    assert await outbox.get() is None and not outbox.overflowed


async def test_a_waiting_writer_wakes_for_a_command_and_for_an_overflow() -> None:
    outbox = Outbox(max_commands=1)
    waiting = asyncio.ensure_future(outbox.get())
    await asyncio.sleep(0)
    outbox.put(_settings())
    assert (await waiting).HasField("settings")
    outbox.put(_settings())
    outbox.put(_settings())  # overflows: the writer learns the end
    assert await asyncio.wait_for(outbox.get(), 1) is None


async def test_a_session_whose_outbox_overflows_is_dropped_and_gets_no_more_checks() -> None:
    sessions = TelemetrySessions(outbox_commands=2)
    slow, other = sessions.open("slow"), sessions.open("other")
    sessions.publishes(slow, ["orders"])
    assert sessions.send(slow, _settings()) and sessions.send(slow, _settings())
    assert not sessions.send(slow, _settings())
    assert sessions.overflowed == 1 and not sessions.connected("orders")
    assert not sessions.push_check("orders", "t1", pb.Message())
    sessions.publishes(other, ["orders"])
    assert sessions.push_check("orders", "t2", pb.Message())
