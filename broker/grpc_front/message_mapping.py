"""RocketMQ 5 protobuf messages <-> halfmq's stored messages and send requests.

A gRPC body is bytes, so it travels as base64 through the same ``OutgoingMessage``
validation the HTTP front uses (reserved properties, size limit); the client's own
message id becomes UNIQ_KEY, the id consumers of both fronts see. A message group and a delivery
timestamp become the send's ``message_group`` and ``deliver_at_ms``, checked by the send service as
for the HTTP front; the client's queue id is not passed on (the broker puts a group in its own queue).
"""

from __future__ import annotations

import base64
import zlib

from google.protobuf.duration_pb2 import Duration
from google.protobuf.timestamp_pb2 import Timestamp
from rocketmq.grpc_protocol import definition_pb2 as pb

from halfmq.broker.usecases.records import MESSAGE_GROUP, SYSTEM_PROPERTIES, TIMER_OUT_MS, StoredMessage, is_transactional
from halfmq.wire import OutgoingMessage

# The message types halfmq's topics accept (every queue advertises them in QueryRoute; Apache's clients check).
ACCEPTED_TYPES = (pb.MessageType.NORMAL, pb.MessageType.FIFO, pb.MessageType.DELAY, pb.MessageType.TRANSACTION)


def type_conflict(sp: pb.SystemProperties) -> str | None:
    """Why a message's type and properties conflict (RocketMQ's MESSAGE_PROPERTY_CONFLICT_WITH_TYPE), None if not.

    Only what RocketMQ refuses: a transactional message with a group or a delivery time (its clients refuse it
    too), a FIFO message without a group, a DELAY message without a time. A FIFO message with a time is timed.
    """
    kind, grouped, timed = sp.message_type, bool(sp.message_group), sp.HasField("delivery_timestamp")
    if kind not in ACCEPTED_TYPES:
        return f"halfmq topics accept NORMAL, FIFO, DELAY and TRANSACTION messages, not {pb.MessageType.Name(kind)}"
    if kind == pb.MessageType.TRANSACTION and (grouped or timed):
        return "a TRANSACTION message carries neither a message group nor a delivery timestamp"
    if kind == pb.MessageType.FIFO and not grouped:
        return "a FIFO message needs a message group"
    if kind == pb.MessageType.DELAY and not timed:
        return "a DELAY message needs a delivery timestamp"
    return None


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
        message_group=sp.message_group or None,
        deliver_at_ms=sp.delivery_timestamp.ToMilliseconds() if sp.HasField("delivery_timestamp") else None,
    )


def message_type(properties: dict[str, str]) -> int:
    """A stored message's type in RocketMQ's proxy order (GrpcConverter): TRANSACTION > DELAY > FIFO > NORMAL."""
    if is_transactional(properties):
        return pb.MessageType.TRANSACTION
    if TIMER_OUT_MS in properties:
        return pb.MessageType.DELAY
    if MESSAGE_GROUP in properties:
        return pb.MessageType.FIFO
    return pb.MessageType.NORMAL


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
        message_type=message_type(props),
        born_timestamp=_timestamp(stored.born_timestamp), born_host="halfmq",
        store_timestamp=_timestamp(stored.store_timestamp), store_host="halfmq",
        queue_id=stored.queue_id, queue_offset=stored.queue_offset,
    )
    if props.get("TAGS"):
        sp.tag = props["TAGS"]
    if props.get("KEYS"):
        sp.keys.extend(props["KEYS"].split(" "))
    if props.get(MESSAGE_GROUP):
        sp.message_group = props[MESSAGE_GROUP]
    if props.get(TIMER_OUT_MS):
        sp.delivery_timestamp.CopyFrom(_timestamp(int(props[TIMER_OUT_MS])))
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
