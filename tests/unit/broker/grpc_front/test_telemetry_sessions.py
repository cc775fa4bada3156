"""Connected producers by group: pushes go round robin and stop when a stream closes; an outbox is bounded, all of them
together draw on the broker's budget of unread bytes, and a principal (and a client) may hold only so many streams."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("rocketmq.grpc_protocol")

from rocketmq.grpc_protocol import definition_pb2 as pb
from rocketmq.grpc_protocol import service_pb2 as spb

from halfmq.broker.grpc_front.telemetry_sessions import Outbox, Session, StreamCaps, TelemetrySessions
from halfmq.errors import TooManyTelemetryStreams


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


def test_a_principal_and_one_client_of_it_may_hold_only_so_many_streams_and_a_closed_one_frees_its_place() -> None:
    sessions = TelemetrySessions(caps=StreamCaps(per_principal=3, per_client=2))
    first = sessions.open("c1", "order")
    sessions.open("c1", "order")
    with pytest.raises(TooManyTelemetryStreams, match="client 'c1' of principal 'order'"):
        sessions.open("c1", "order")
    third = sessions.open("c2", "order")
    with pytest.raises(TooManyTelemetryStreams, match="principal 'order'") as refused:
        sessions.open("c3", "order")
    assert (refused.value.status, sessions.refused, sessions.streams("order")) == (429, 2, 3)
    sessions.open("c1", "credit")  # another principal, even with the same client id, is not held back
    sessions.close(first)
    sessions.close(first)  # the stream's end and an overflow may both close it: counted once
    assert sessions.streams("order") == 2
    sessions.open("c1", "order")
    sessions.close(third)
    sessions.open("c3", "order")


def test_past_the_brokers_budget_the_stream_holding_the_most_unread_ends_not_the_one_sent_to() -> None:
    reply = _settings(10)
    sessions = TelemetrySessions(unread_bytes=3 * reply.ByteSize())
    greedy, polite = sessions.open("greedy", "mallory"), sessions.open("polite", "order")
    sessions.publishes(polite, ["orders"])
    assert all(sessions.send(greedy, reply) for _ in range(3))
    assert sessions.budget.held == 3 * reply.ByteSize()
    assert sessions.send(polite, reply)  # the budget is spent: greedy, holding the most, pays for it
    assert greedy.outbox.overflowed and "broker's telemetry streams hold" in greedy.outbox.why
    assert not polite.outbox.overflowed and sessions.connected("orders")
    assert sessions.budget.held == polite.outbox.bytes == reply.ByteSize() and sessions.overflowed == 1


def test_a_stream_that_holds_the_most_when_the_budget_is_spent_is_the_one_that_ends() -> None:
    reply = _settings(10)
    sessions = TelemetrySessions(unread_bytes=3 * reply.ByteSize())
    a, b = sessions.open("a", "p"), sessions.open("b", "p")
    assert sessions.send(a, reply) and sessions.send(b, reply) and sessions.send(b, reply)
    assert not sessions.send(b, reply)
    assert b.outbox.overflowed and not a.outbox.overflowed
    assert sessions.budget.held == a.outbox.bytes == reply.ByteSize()


async def test_the_budget_gets_back_what_a_stream_writes_and_what_a_closed_one_held() -> None:
    reply = _settings(10)
    sessions = TelemetrySessions()
    a, b = sessions.open("a", "p"), sessions.open("b", "p")
    for session in (a, b, b):
        sessions.send(session, reply)
    assert (await a.outbox.get()).settings == reply.settings  # kept serialized, handed out as the command
    assert sessions.budget.held == 2 * reply.ByteSize()
    sessions.close(b)
    assert sessions.budget.held == 0
