"""The broker's validation of HTTP API v1 requests (pydantic, server side only).

Field names follow DESIGN.md section 6. The answers, and the SDK's own spelling of the
requests it sends, are msgspec structs in ``halfmq.wire`` so ``pip install halfmq``
needs no pydantic; the limits live there once, and a unit test keeps the two spellings of
``OutgoingMessage`` and ``ReceiveRequest`` alike.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from halfmq.wire import (
    MAX_BATCH,
    MAX_HALF_COMPANIONS,
    MAX_INVISIBLE_SECONDS,
    MAX_NACK_REASON,
    MAX_RECEIVE,
    MAX_TAG_LENGTH,
    MAX_WAIT_SECONDS,
    EndState,
    TransactionState,
)


class _Wire(BaseModel):
    model_config = ConfigDict(extra="forbid")


BodyEncoding = Literal["utf-8", "base64"]


class OutgoingMessage(_Wire):
    body: str
    body_encoding: BodyEncoding = "utf-8"
    keys: list[str] | str | None = None
    tag: str | None = Field(default=None, max_length=MAX_TAG_LENGTH)
    properties: dict[str, str] = Field(default_factory=dict)
    queue_id: int | None = Field(default=None, ge=0)
    sharding_key: str | None = None
    message_group: str | None = None  # checked by the send service (INVALID_MESSAGE_GROUP), which every front calls
    deliver_at_ms: int | None = Field(default=None, ge=0)  # at most one of the two (send_service: INVALID_DELIVERY_TIME)
    delay_ms: int | None = Field(default=None, ge=0)


class SendRequest(_Wire):
    messages: list[OutgoingMessage] = Field(min_length=1, max_length=MAX_BATCH)
    # An idempotent send (DESIGN section 11) carries all three: the producer id and epoch from an init, and its number.
    producer_id: int | None = Field(default=None, ge=0)
    epoch: int | None = Field(default=None, ge=0)
    sequence: int | None = Field(default=None, ge=0)


class TopicCreate(_Wire):
    name: str
    queues: int | None = None


class ResetOffsetsRequest(_Wire):
    """Where a consumer group's committed offsets on a topic go (``delivery.offset_reset``): all its queues, or one."""

    to: Literal["earliest", "latest", "timestamp", "duration", "offset"]
    queue_id: int | None = Field(default=None, ge=0, description="one queue; all of the topic's when absent")
    timestamp_ms: int | None = Field(default=None, ge=0, description="to: timestamp: the first message stored at or after it")
    ago_ms: int | None = Field(default=None, ge=0, description="to: duration: the first message stored at or after this long ago")
    offset: int | None = Field(default=None, ge=0, description="to: offset: this queue offset (clamped to each queue's range)")
    dry_run: bool = Field(default=False, description="answer the plan, change nothing")
    force: bool = Field(default=False, description="reset although deliveries are in flight (they are delivered again)")


class DlqRedriveRequest(_Wire):
    """A bulk redrive of a group's DLQ: every dead letter there now (or the first ``max_messages``), at a rate."""

    max_messages: int | None = Field(default=None, ge=1, description="at most this many (default: all there now)")
    rate_per_second: float | None = Field(default=None, gt=0, description="resends a second (default: HALFMQ_BROKER_DLQ_REDRIVE_RATE)")


class ReceiveRequest(_Wire):
    max_messages: int = Field(default=16, ge=1, le=MAX_RECEIVE)
    invisible_seconds: float = Field(default=30.0, gt=0, le=MAX_INVISIBLE_SECONDS)
    wait_seconds: float = Field(default=0.0, ge=0, le=MAX_WAIT_SECONDS)
    tags: list[str] | str | None = Field(default=None, description="deliver only messages with one of these tags (a list, or "
                                         "RocketMQ's expression \"a || b\"; \"*\": all); the others are consumed for the group "
                                         "(at most 32 tags; INVALID_TAG_FILTER)")


class SettleRequest(_Wire):
    receipt_handles: list[str] = Field(min_length=1, max_length=MAX_RECEIVE)


class NackRequest(SettleRequest):
    reason: str | None = Field(default=None, max_length=MAX_NACK_REASON, description="why: kept in the message's journey")


class ChangeInvisibleRequest(SettleRequest):
    invisible_seconds: float = Field(ge=0, le=MAX_INVISIBLE_SECONDS, description="hidden this long from now; 0: visible again at once")


class TxnMessage(OutgoingMessage):
    """A message that names its own topic: in a producer transaction, or a half send's companion (``also``)."""

    topic: str


# Transactional messages (DESIGN section 4); EndState and TransactionState are shared with the SDK (wire).


class HalfSendRequest(_Wire):
    producer_group: str = Field(min_length=1, max_length=255)
    topic: str
    message: OutgoingMessage
    producer_id: int | None = Field(default=None, ge=0)  # an idempotent half send, as for SendRequest
    epoch: int | None = Field(default=None, ge=0)
    sequence: int | None = Field(default=None, ge=0)
    # halfmq's extension (not RocketMQ's): more messages decided by the same local transaction, one half each,
    # committed (each through its own delay) or rolled back with ``message`` as one write group.
    also: list[TxnMessage] = Field(default_factory=list, max_length=MAX_HALF_COMPANIONS)


class EndRequest(_Wire):
    producer_group: str = Field(min_length=1, max_length=255)
    state: EndState
    from_check: bool = False


class EndItem(EndRequest):
    """One end of a batch end: the single end's body plus the transaction it ends (the single route's path)."""

    transaction_id: str = Field(min_length=1, max_length=255)


class HalfBatchRequest(_Wire):
    """POST /v1/transaction-batches/half: up to MAX_BATCH half sends, each answered on its own."""

    items: list[HalfSendRequest] = Field(min_length=1, max_length=MAX_BATCH)


class EndBatchRequest(_Wire):
    """POST /v1/transaction-batches/end: up to MAX_BATCH ends, each answered on its own."""

    items: list[EndItem] = Field(min_length=1, max_length=MAX_BATCH)


class RawBatch(_Wire):
    """A batch's envelope only: each item is validated on its own, so one malformed item fails only itself."""

    items: list[Any] = Field(min_length=1, max_length=MAX_BATCH)


class Heartbeat(_Wire):
    producer_group: str = Field(min_length=1, max_length=255)
    client_id: str = Field(min_length=1, max_length=255)
    check_url: str | None = None

# Producer transactions (DESIGN section 11)


class InitProducer(_Wire):
    transaction_timeout_ms: int | None = None


class NewProducerId(_Wire):
    """POST /v1/producer-ids: an idempotent producer id without a transactional id; the body is ``{}`` (nothing to choose)."""


# Each request spells its producer fields out (no shared base): every request model is a direct _Wire
# subclass, which is how the bad-input sweep finds them all.
class BeginTxnRequest(_Wire):
    producer_id: int = Field(ge=0)
    epoch: int = Field(ge=0)
    sequence: int = Field(ge=0)


class TxnMessagesRequest(_Wire):
    producer_id: int = Field(ge=0)
    epoch: int = Field(ge=0)
    sequence: int = Field(ge=0)
    messages: list[TxnMessage] = Field(min_length=1, max_length=MAX_BATCH)


class TxnAcksRequest(_Wire):
    producer_id: int = Field(ge=0)
    epoch: int = Field(ge=0)
    sequence: int = Field(ge=0)
    receipt_handles: list[str] = Field(min_length=1, max_length=MAX_RECEIVE)


class EndTxnRequest(_Wire):
    producer_id: int = Field(ge=0)
    epoch: int = Field(ge=0)


__all__ = [
    "EndBatchRequest", "EndItem", "HalfBatchRequest", "RawBatch",
    "BodyEncoding", "EndRequest", "EndState", "HalfSendRequest", "Heartbeat", "OutgoingMessage", "ReceiveRequest",
    "SendRequest", "SettleRequest", "TopicCreate", "TransactionState",
    "BeginTxnRequest", "EndTxnRequest", "InitProducer", "TxnAcksRequest", "TxnMessage", "TxnMessagesRequest",
]
