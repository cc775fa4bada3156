"""Bad input over gRPC gets RocketMQ's status codes and changes nothing; calls halfmq does not serve say so."""

from __future__ import annotations

import re
import time

import grpc
import httpx
import pytest
from google.protobuf.timestamp_pb2 import Timestamp
from rocketmq.grpc_protocol import definition_pb2 as pb
from rocketmq.grpc_protocol import service_pb2 as spb
from rocketmq.grpc_protocol import service_pb2_grpc as rpc

from .conftest import RmqBroker

pytestmark = pytest.mark.slow


@pytest.fixture
def strict_broker(start_rmq_broker) -> RmqBroker:
    broker = start_rmq_broker({"HALFMQ_BROKER_AUTO_CREATE_TOPICS": "false", "HALFMQ_BROKER_MAX_MESSAGE_SIZE": "1024"})
    httpx.post(f"{broker.url}/v1/topics", json={"name": "orders", "queues": 2}).raise_for_status()
    return broker


@pytest.fixture
def stub(strict_broker: RmqBroker):
    with grpc.insecure_channel(strict_broker.endpoint) as channel:
        yield rpc.MessagingServiceStub(channel)


def commit_log_end(broker: RmqBroker) -> float:
    text = httpx.get(f"{broker.url}/metrics").text
    return float(re.search(r"^halfmq_commit_log_end_offset (\S+)$", text, re.M).group(1))


def send(stub, topic: str, body: bytes, kind: int = pb.MessageType.NORMAL, user_properties: dict[str, str] | None = None,
         **system) -> spb.SendMessageResponse:
    sp = pb.SystemProperties(message_id="0102FC00000001000000000000000001", message_type=kind, body_encoding=pb.Encoding.IDENTITY, **system)
    message = pb.Message(topic=pb.Resource(name=topic), system_properties=sp, body=body, user_properties=user_properties or {})
    return stub.SendMessage(spb.SendMessageRequest(messages=[message]))


def in_seconds(seconds: float) -> Timestamp:
    ts = Timestamp()
    ts.FromMilliseconds(int((time.time() + seconds) * 1000))
    return ts


def test_bad_sends_get_rocketmq_codes_and_write_nothing(strict_broker: RmqBroker, stub) -> None:
    before = commit_log_end(strict_broker)
    conflict = pb.Code.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE
    assert send(stub, "no-such-topic", b"x").status.code == pb.Code.TOPIC_NOT_FOUND
    assert send(stub, "orders", b"x", pb.MessageType.FIFO).status.code == conflict  # FIFO without a group
    assert send(stub, "orders", b"x", pb.MessageType.DELAY).status.code == conflict  # DELAY without a time
    assert send(stub, "orders", b"x", pb.MessageType.TRANSACTION, message_group="g").status.code == conflict
    assert send(stub, "orders", b"x", pb.MessageType.TRANSACTION, delivery_timestamp=in_seconds(5)).status.code == conflict
    assert send(stub, "orders", b"x", pb.MessageType.FIFO, message_group="g" * 65).status.code == pb.Code.ILLEGAL_MESSAGE_GROUP
    assert send(stub, "orders", b"x", pb.MessageType.DELAY,
                delivery_timestamp=in_seconds(4 * 24 * 3600)).status.code == pb.Code.ILLEGAL_DELIVERY_TIME  # past 3 days
    assert send(stub, "orders", b"x" * 2000).status.code == pb.Code.MESSAGE_BODY_TOO_LARGE
    emoji = "\N{GRINNING FACE}" * 300  # 300 characters, 1,200 bytes: over the 1,024 only counted in bytes
    assert send(stub, "orders", b"x", user_properties={"note": emoji}).status.code == pb.Code.MESSAGE_BODY_TOO_LARGE
    assert send(stub, "%SYS-bad", b"x").status.code == pb.Code.ILLEGAL_TOPIC
    assert send(stub, "orders", b"x", keys=[f"k{i}" for i in range(65)]).status.code == pb.Code.ILLEGAL_MESSAGE_KEY
    assert send(stub, "orders", b"x", keys=[f"k{i:06d}" for i in range(40_000)]).status.code == pb.Code.MESSAGE_PROPERTIES_TOO_LARGE
    assert commit_log_end(strict_broker) == before
    route = stub.QueryRoute(spb.QueryRouteRequest(topic=pb.Resource(name="no-such-topic")))
    assert route.status.code == pb.Code.TOPIC_NOT_FOUND


def received(stub, group: str, wait: float = 0) -> list[pb.Message]:
    queue = pb.MessageQueue(topic=pb.Resource(name="orders"), id=-1)
    request = spb.ReceiveMessageRequest(group=pb.Resource(name=group), message_queue=queue, batch_size=16,
                                        long_polling_timeout={"seconds": int(wait)})
    return [r.message for r in stub.ReceiveMessage(request) if r.HasField("message")]


def ack(stub, group: str, message: pb.Message) -> int:
    entry = spb.AckMessageEntry(message_id=message.system_properties.message_id, receipt_handle=message.system_properties.receipt_handle)
    return stub.AckMessage(spb.AckMessageRequest(group=pb.Resource(name=group), topic=pb.Resource(name="orders"), entries=[entry])).status.code


def test_a_fifo_send_with_the_clients_own_queue_id_is_accepted_and_its_group_delivered_in_order(stub) -> None:
    # Apache's clients pick a FIFO message's queue themselves (a hash of the group); the broker puts it in the group's
    for queue_id in (0, 1):  # own queue and ignores theirs, so a queue id with a group is no INVALID_REQUEST here
        answer = send(stub, "orders", f"fifo-{queue_id}".encode(), pb.MessageType.FIFO, message_group="u1", queue_id=queue_id)
        assert answer.status.code == pb.Code.OK
    [first] = received(stub, "fifo")  # one message of a group at a time: the next after this one's ack
    assert (first.body, first.system_properties.message_type, first.system_properties.message_group) == (b"fifo-0", pb.MessageType.FIFO, "u1")
    assert received(stub, "fifo") == []
    assert ack(stub, "fifo", first) == pb.Code.OK
    [second] = received(stub, "fifo")
    assert (second.body, second.system_properties.queue_id) == (b"fifo-1", first.system_properties.queue_id)


def test_a_delay_send_is_delivered_with_its_delivery_timestamp_once_due(stub) -> None:
    due = in_seconds(2)
    sent = send(stub, "orders", b"later", pb.MessageType.DELAY, delivery_timestamp=due)
    assert sent.status.code == pb.Code.OK
    got: list[pb.Message] = []
    deadline = time.time() + 30
    while not got and time.time() < deadline:
        got = received(stub, "timed", wait=5)
    [message] = got
    assert (message.body, message.system_properties.message_type) == (b"later", pb.MessageType.DELAY)
    assert message.system_properties.delivery_timestamp.ToMilliseconds() == due.ToMilliseconds()
    assert message.system_properties.store_timestamp.ToMilliseconds() >= due.ToMilliseconds()  # released when due


def test_a_forged_receipt_handle_is_refused_and_the_delivery_stays_held(strict_broker: RmqBroker, stub) -> None:
    assert send(stub, "orders", b"real").status.code == pb.Code.OK
    queue = pb.MessageQueue(topic=pb.Resource(name="orders"), id=-1)
    responses = list(stub.ReceiveMessage(spb.ReceiveMessageRequest(group=pb.Resource(name="g1"), message_queue=queue, batch_size=4)))
    [held] = [r.message for r in responses if r.HasField("message")]
    forged = held.system_properties.receipt_handle[:-4] + "AAAA"
    ack = stub.AckMessage(spb.AckMessageRequest(group=pb.Resource(name="g1"), topic=pb.Resource(name="orders"),
                                                entries=[spb.AckMessageEntry(message_id="m", receipt_handle=forged)]))
    assert ack.status.code == pb.Code.INVALID_RECEIPT_HANDLE
    change = stub.ChangeInvisibleDuration(spb.ChangeInvisibleDurationRequest(
        group=pb.Resource(name="g1"), topic=pb.Resource(name="orders"), receipt_handle="not-a-handle"))
    assert change.status.code == pb.Code.INVALID_RECEIPT_HANDLE
    lag = httpx.get(f"{strict_broker.url}/v1/consumer-groups/g1").json()
    assert sum(q["in_flight"] for topic in lag["topics"] for q in topic["queues"]) == 1


def test_end_transaction_of_an_unknown_id_is_invalid_transaction_id(strict_broker: RmqBroker, stub) -> None:
    answer = stub.EndTransaction(spb.EndTransactionRequest(topic=pb.Resource(name="orders"), transaction_id="nope",
                                                           resolution=pb.TransactionResolution.COMMIT))
    assert answer.status.code == pb.Code.INVALID_TRANSACTION_ID


def test_a_half_message_sent_over_grpc_appears_in_the_operator_view(strict_broker: RmqBroker, stub) -> None:
    sent = send(stub, "orders", b"pending", pb.MessageType.TRANSACTION)
    assert sent.status.code == pb.Code.OK
    view = httpx.get(f"{strict_broker.url}/v1/transactions/{sent.entries[0].transaction_id}").json()
    assert (view["state"], view["producer_group"], view["message"]["body"]) == ("pending", "orders", "pending")


def test_a_recall_with_a_forged_handle_is_a_bad_request_and_the_timer_stays(strict_broker: RmqBroker, stub) -> None:
    sent = send(stub, "orders", b"later", pb.MessageType.DELAY, delivery_timestamp=in_seconds(60))
    handle = sent.entries[0].recall_handle
    before = commit_log_end(strict_broker)
    for forged in ("", "not-a-handle", handle[:-4] + "AAAA"):
        answer = stub.RecallMessage(spb.RecallMessageRequest(topic=pb.Resource(name="orders"), recall_handle=forged))
        assert answer.status.code == pb.Code.BAD_REQUEST and "INVALID_RECALL_HANDLE" in answer.status.message
    other = stub.RecallMessage(spb.RecallMessageRequest(topic=pb.Resource(name="elsewhere"), recall_handle=handle))
    assert other.status.code == pb.Code.BAD_REQUEST
    assert commit_log_end(strict_broker) == before
    assert stub.RecallMessage(spb.RecallMessageRequest(topic=pb.Resource(name="orders"), recall_handle=handle)).status.code == pb.Code.OK


def test_calls_halfmq_does_not_serve_answer_not_implemented(stub) -> None:
    answer = stub.QueryOffset(spb.QueryOffsetRequest(message_queue=pb.MessageQueue(topic=pb.Resource(name="orders"))))
    assert answer.status.code == pb.Code.NOT_IMPLEMENTED
    [pulled] = list(stub.PullMessage(spb.PullMessageRequest()))
    assert pulled.status.code == pb.Code.NOT_IMPLEMENTED
