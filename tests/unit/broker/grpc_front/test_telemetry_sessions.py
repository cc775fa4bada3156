"""Connected producers by group: pushes go round robin and stop when a stream closes."""

from __future__ import annotations

import pytest

pytest.importorskip("rocketmq.grpc_protocol")

from rocketmq.grpc_protocol import definition_pb2 as pb

from halfmq.broker.grpc_front.telemetry_sessions import Session, TelemetrySessions


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
