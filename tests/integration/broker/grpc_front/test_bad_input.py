"""Bad input over gRPC gets RocketMQ's status codes and changes nothing; calls halfmq does not serve say so."""

from __future__ import annotations

import re

import grpc
import httpx
import pytest
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


def send(stub, topic: str, body: bytes, kind: int = pb.MessageType.NORMAL, **system) -> spb.SendMessageResponse:
    sp = pb.SystemProperties(message_id="0102FC00000001000000000000000001", message_type=kind, body_encoding=pb.Encoding.IDENTITY, **system)
    return stub.SendMessage(spb.SendMessageRequest(messages=[pb.Message(topic=pb.Resource(name=topic), system_properties=sp, body=body)]))


def test_bad_sends_get_rocketmq_codes_and_write_nothing(strict_broker: RmqBroker, stub) -> None:
    before = commit_log_end(strict_broker)
    assert send(stub, "no-such-topic", b"x").status.code == pb.Code.TOPIC_NOT_FOUND
    assert send(stub, "orders", b"x", pb.MessageType.FIFO, message_group="g").status.code == pb.Code.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE
    assert send(stub, "orders", b"x", pb.MessageType.DELAY).status.code == pb.Code.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE
    assert send(stub, "orders", b"x" * 2000).status.code == pb.Code.MESSAGE_BODY_TOO_LARGE
    assert send(stub, "%SYS-bad", b"x").status.code == pb.Code.ILLEGAL_TOPIC
    assert commit_log_end(strict_broker) == before
    route = stub.QueryRoute(spb.QueryRouteRequest(topic=pb.Resource(name="no-such-topic")))
    assert route.status.code == pb.Code.TOPIC_NOT_FOUND


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


def test_calls_halfmq_does_not_serve_answer_not_implemented(stub) -> None:
    answer = stub.QueryOffset(spb.QueryOffsetRequest(message_queue=pb.MessageQueue(topic=pb.Resource(name="orders"))))
    assert answer.status.code == pb.Code.NOT_IMPLEMENTED
    [pulled] = list(stub.PullMessage(spb.PullMessageRequest()))
    assert pulled.status.code == pb.Code.NOT_IMPLEMENTED
