"""The RocketMQ 5 front's SendMessage past the disk's refuse-sends mark (docs/decisions/053-disk-watermarks.md).

Marks below what the real disk holds: the send gets a non-OK status naming DISK_ALMOST_FULL (INTERNAL_SERVER_ERROR,
as STORE_UNAVAILABLE maps) and stores nothing.
"""

from __future__ import annotations

import re

import grpc
import httpx
from rocketmq.grpc_protocol import definition_pb2 as pb
from rocketmq.grpc_protocol import service_pb2 as spb
from rocketmq.grpc_protocol import service_pb2_grpc as rpc

from .conftest import RmqBroker

FULL = {"HALFMQ_BROKER_DISK_EARLY_DELETE_RATIO": "0.0001", "HALFMQ_BROKER_DISK_REFUSE_SENDS_RATIO": "0.0002"}


def commit_log_end(broker: RmqBroker) -> float:
    text = httpx.get(f"{broker.url}/metrics").text
    return float(re.search(r"^halfmq_commit_log_end_offset (\S+)$", text, re.M).group(1))  # type: ignore[union-attr]


def test_a_grpc_send_past_the_refuse_sends_mark_is_refused_naming_the_code_and_stores_nothing(start_rmq_broker) -> None:
    broker = start_rmq_broker(FULL)
    httpx.post(f"{broker.url}/v1/topics", json={"name": "orders", "queues": 1}).raise_for_status()
    before = commit_log_end(broker)
    sp = pb.SystemProperties(message_id="0102FC00000001000000000000000001", message_type=pb.MessageType.NORMAL,
                             body_encoding=pb.Encoding.IDENTITY)
    message = pb.Message(topic=pb.Resource(name="orders"), system_properties=sp, body=b"refused")
    with grpc.insecure_channel(broker.endpoint) as channel:
        answer = rpc.MessagingServiceStub(channel).SendMessage(spb.SendMessageRequest(messages=[message]))
    assert answer.status.code == pb.Code.INTERNAL_SERVER_ERROR and "DISK_ALMOST_FULL" in answer.status.message, answer.status
    assert commit_log_end(broker) == before
