"""RocketMQ 5 protobuf messages <-> halfmq's stored messages and send requests.

A gRPC body is bytes, so it travels as base64 through the same ``OutgoingMessage``
validation the HTTP front uses (reserved properties, size limit); the client's own
message id becomes UNIQ_KEY, the id consumers of both fronts see.
"""

from __future__ import annotations

import base64
import zlib

from google.protobuf.duration_pb2 import Duration
from google.protobuf.timestamp_pb2 import Timestamp
from rocketmq.grpc_protocol import definition_pb2 as pb

from halfmq.broker.protocol import OutgoingMessage
from halfmq.broker.usecases.records import BROKER_PROPERTIES, StoredMessage, is_transactional

# Properties halfmq keeps that RocketMQ carries in system_properties, or that are the broker's own.
SYSTEM_PROPERTIES = frozenset({"UNIQ_KEY", "KEYS", "TAGS", *BROKER_PROPERTIES})


def outgoing(message: pb.Message) -> OutgoingMessage:
    sp = message.system_properties
    properties = dict(message.user_properties)
    if sp.message_id:
        properties["UNIQ_KEY"] = sp.message_id
    try:  # text stays text, so the HTTP front hands it out as a string; anything else travels as base64
        body, encoding = message.body.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        body, encoding = base64.b64encode(message.body).decode("ascii"), "base64"
    return OutgoingMessage(
        body=body, body_encoding=encoding,
        keys=list(sp.keys) or None, tag=sp.tag or None, properties=properties,
    )


def _timestamp(ms: int) -> Timestamp:
    ts = Timestamp()
    ts.FromMilliseconds(ms)
    return ts


def to_protobuf(stored: StoredMessage, *, receipt_handle: str = "", delivery_attempt: int = 0,
                invisible_seconds: float = 0.0) -> pb.Message:
    props = stored.properties
    sp = pb.SystemProperties(
        message_id=props.get("UNIQ_KEY", ""),
        body_digest=pb.Digest(type=pb.DigestType.CRC32, checksum=format(zlib.crc32(stored.body) & 0xFFFFFFFF, "08X")),
        body_encoding=pb.Encoding.IDENTITY,
        message_type=pb.MessageType.TRANSACTION if is_transactional(props) else pb.MessageType.NORMAL,
        born_timestamp=_timestamp(stored.born_timestamp), born_host="halfmq",
        store_timestamp=_timestamp(stored.store_timestamp), store_host="halfmq",
        queue_id=stored.queue_id, queue_offset=stored.queue_offset,
    )
    if props.get("TAGS"):
        sp.tag = props["TAGS"]
    if props.get("KEYS"):
        sp.keys.extend(props["KEYS"].split(" "))
    if receipt_handle:
        sp.receipt_handle = receipt_handle
        sp.delivery_attempt = delivery_attempt
        sp.invisible_duration.CopyFrom(duration(invisible_seconds))
    user = {k: v for k, v in props.items() if k not in SYSTEM_PROPERTIES}
    return pb.Message(topic=pb.Resource(name=stored.topic), user_properties=user, system_properties=sp, body=stored.body)


def duration(seconds: float) -> Duration:
    d = Duration()
    d.FromMilliseconds(int(seconds * 1000))
    return d


def seconds(d: Duration) -> float:
    return d.seconds + d.nanos / 1e9
