"""Wire models of HTTP API v1, shared by the API and the client.

They are the one description of what crosses the wire, so the server and the
SDK cannot drift apart. Field names follow DESIGN.md section 6.
"""

from __future__ import annotations

from enum import Enum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

MAX_BATCH = 1000
MAX_RECEIVE = 256


class _Wire(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SendStatus(str, Enum):
    SEND_OK = "SEND_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"


BodyEncoding = Literal["utf-8", "base64"]


class OutgoingMessage(_Wire):
    body: str
    body_encoding: BodyEncoding = "utf-8"
    keys: list[str] | str | None = None
    tag: str | None = Field(default=None, max_length=255)
    properties: dict[str, str] = Field(default_factory=dict)
    queue_id: int | None = Field(default=None, ge=0)
    sharding_key: str | None = None


class SendRequest(_Wire):
    messages: list[OutgoingMessage] = Field(min_length=1, max_length=MAX_BATCH)


class SendResult(_Wire):
    status: SendStatus
    msg_id: str
    topic: str
    queue_id: int
    queue_offset: int
    commit_log_offset: int


class SendResponse(_Wire):
    results: list[SendResult]


class Message(_Wire):
    msg_id: str
    topic: str
    queue_id: int
    queue_offset: int
    commit_log_offset: int
    born_timestamp: int
    store_timestamp: int
    body: str
    body_encoding: BodyEncoding = "utf-8"
    keys: list[str] = Field(default_factory=list)
    tag: str | None = None
    properties: dict[str, str] = Field(default_factory=dict)
    receipt_handle: str | None = None
    delivery_attempt: int | None = None


class TopicCreate(_Wire):
    name: str
    queues: int | None = None


class QueueInfo(_Wire):
    queue_id: int
    min_offset: int
    max_offset: int


class TopicInfo(_Wire):
    name: str
    queues: list[QueueInfo]


class TopicList(_Wire):
    topics: list[TopicInfo]


class OffsetReadResponse(_Wire):
    messages: list[Message]
    next_offset: int
    damaged_offsets: list[int] = []  # queue offsets in this range whose record is damaged (sent only when some are)


class ReceiveRequest(_Wire):
    max_messages: int = Field(default=16, ge=1, le=MAX_RECEIVE)
    invisible_seconds: float = Field(default=30.0, gt=0, le=12 * 3600)
    wait_seconds: float = Field(default=0.0, ge=0, le=30)


class ReceiveResponse(_Wire):
    messages: list[Message]


class SettleRequest(_Wire):
    receipt_handles: list[str] = Field(min_length=1, max_length=MAX_RECEIVE)


class SettleStatus(str, Enum):
    OK = "OK"
    EXPIRED = "EXPIRED"


class SettleResult(_Wire):
    receipt_handle: str
    status: SettleStatus


class SettleResponse(_Wire):
    results: list[SettleResult]


class GroupQueueState(_Wire):
    queue_id: int
    committed_offset: int
    max_offset: int
    lag: int
    in_flight: int


class GroupTopicState(_Wire):
    topic: str
    queues: list[GroupQueueState]


class ConsumerGroupInfo(_Wire):
    group: str
    topics: list[GroupTopicState]


# Transactional messages (DESIGN section 4).
class TransactionState(str, Enum):
    """A transaction's state: the broker's state machine moves it, GET /v1/transactions?state= filters on it."""

    PENDING = "pending"
    COMMITTED = "committed"
    ROLLED_BACK = "rolled_back"
    DISCARDED = "discarded"


EndState = Literal["commit", "rollback", "unknown"]  # an end request's state, and a check-back's answer


class HalfSendRequest(_Wire):
    producer_group: str = Field(min_length=1, max_length=255)
    topic: str
    message: OutgoingMessage


class HalfSendResult(_Wire):
    status: SendStatus
    transaction_id: str
    msg_id: str
    commit_log_offset: int
    queue_offset: int


class EndRequest(_Wire):
    producer_group: str = Field(min_length=1, max_length=255)
    state: EndState
    from_check: bool = False


class Heartbeat(_Wire):
    producer_group: str = Field(min_length=1, max_length=255)
    client_id: str = Field(min_length=1, max_length=255)
    check_url: str | None = None


class CheckRequest(_Wire):
    transaction_id: str
    producer_group: str
    check_times: int
    message: Message
