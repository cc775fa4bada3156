"""RocketMQ 5 messages <-> halfmq's: the message types, a message group and a delivery timestamp, both ways."""

from __future__ import annotations

import pytest

pb = pytest.importorskip("rocketmq.grpc_protocol.definition_pb2")

from google.protobuf.timestamp_pb2 import Timestamp  # noqa: E402

from halfmq.broker.grpc_front import message_mapping as mm  # noqa: E402
from halfmq.broker.usecases.records import MESSAGE_GROUP, TIMER_OUT_MS, StoredMessage  # noqa: E402

T = pb.MessageType
DUE_MS = 1_900_000_000_123


def system(kind: int, group: str = "", due_ms: int | None = None, queue_id: int = 0) -> pb.SystemProperties:
    sp = pb.SystemProperties(message_id="01", message_type=kind, message_group=group, queue_id=queue_id)
    if due_ms is not None:
        ts = Timestamp()
        ts.FromMilliseconds(due_ms)
        sp.delivery_timestamp.CopyFrom(ts)
    return sp


def stored(properties: dict[str, str]) -> StoredMessage:
    return StoredMessage("orders", 1, 7, 700, 1_000, 2_000, {"UNIQ_KEY": "01", **properties}, b"body")


@pytest.mark.parametrize(("sp", "refused"), [
    (system(T.NORMAL), False),
    (system(T.FIFO, "u1"), False),
    (system(T.FIFO, "u1", DUE_MS), False),  # a FIFO message with a time is timed (Apache's clients send this)
    (system(T.DELAY, due_ms=DUE_MS), False),
    (system(T.TRANSACTION), False),
    (system(T.FIFO), True),
    (system(T.DELAY), True),
    (system(T.TRANSACTION, "u1"), True),
    (system(T.TRANSACTION, due_ms=DUE_MS), True),
    (system(T.MESSAGE_TYPE_UNSPECIFIED), True),
    (system(T.LITE), True),
])
def test_only_what_rocketmq_refuses_is_a_type_conflict(sp: pb.SystemProperties, refused: bool) -> None:
    assert (mm.type_conflict(sp) is not None) == refused


def test_every_accepted_type_is_one_a_route_advertises() -> None:
    assert set(mm.ACCEPTED_TYPES) == {T.NORMAL, T.FIFO, T.DELAY, T.TRANSACTION}


def test_a_group_and_a_delivery_timestamp_become_the_sends_fields_and_the_clients_queue_id_is_dropped() -> None:
    message = pb.Message(topic=pb.Resource(name="orders"), body=b"x", system_properties=system(T.FIFO, "u1", DUE_MS, queue_id=3))
    out = mm.outgoing(message)
    assert (out.message_group, out.deliver_at_ms, out.delay_ms, out.queue_id) == ("u1", DUE_MS, None, None)


def test_a_plain_message_has_neither_field() -> None:
    out = mm.outgoing(pb.Message(topic=pb.Resource(name="orders"), body=b"x", system_properties=system(T.NORMAL)))
    assert (out.message_group, out.deliver_at_ms) == (None, None)


@pytest.mark.parametrize(("properties", "kind"), [
    ({}, T.NORMAL),
    ({MESSAGE_GROUP: "u1"}, T.FIFO),
    ({MESSAGE_GROUP: "u1", TIMER_OUT_MS: str(DUE_MS)}, T.DELAY),
    ({"TRAN_MSG": "true", MESSAGE_GROUP: "u1", TIMER_OUT_MS: str(DUE_MS)}, T.TRANSACTION),
])
def test_a_stored_messages_type_follows_the_proxys_order(properties: dict[str, str], kind: int) -> None:
    assert mm.to_protobuf(stored(properties)).system_properties.message_type == kind


def test_a_delivered_message_carries_its_group_and_due_time_as_system_properties_only() -> None:
    message = mm.to_protobuf(stored({MESSAGE_GROUP: "u1", TIMER_OUT_MS: str(DUE_MS), "user": "v"}))
    sp = message.system_properties
    assert (sp.message_group, sp.delivery_timestamp.ToMilliseconds()) == ("u1", DUE_MS)
    assert dict(message.user_properties) == {"user": "v"}


def test_a_message_without_them_has_no_delivery_timestamp() -> None:
    sp = mm.to_protobuf(stored({})).system_properties
    assert (sp.message_group, sp.HasField("delivery_timestamp")) == ("", False)
