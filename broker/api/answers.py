"""Response shapes of the hot routes, for the OpenAPI document only.

The hot path renders plain dicts with orjson and never validates its own
answers (that would cost every request); these models describe those dicts
so a client generator and schemathesis know what comes back. Extra fields are
allowed: an answer may grow without breaking its documented shape.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class _Answer(BaseModel):
    model_config = ConfigDict(extra="allow")


class SendResult(_Answer):
    status: str
    msg_id: str
    topic: str
    queue_id: int
    queue_offset: int
    commit_log_offset: int


class SendAnswer(_Answer):
    results: list[SendResult]
    duplicate: bool | None = None


class HalfSendAnswer(_Answer):
    status: str
    transaction_id: str
    msg_id: str
    commit_log_offset: int
    queue_offset: int
    duplicate: bool | None = None


class MessageView(_Answer):
    msg_id: str
    topic: str
    queue_id: int
    queue_offset: int
    commit_log_offset: int
    born_timestamp: int
    store_timestamp: int
    body: str
    body_encoding: str
    keys: list[str]
    tag: str | None = None
    properties: dict[str, str]


class TransactionView(_Answer):
    transaction_id: str
    producer_group: str
    state: str
    check_times: int
    born_timestamp: int
    age_seconds: float
    last_answer: str | None = None
    last_check_timestamp: int | None = None
    next_check_timestamp: int | None = None
    resolved_timestamp: int | None = None
    final: bool
    message: MessageView
    duplicate: bool | None = None


class DeliveredMessage(MessageView):
    receipt_handle: str
    delivery_attempt: int


class ReceiveAnswer(_Answer):
    messages: list[DeliveredMessage]


class SettleResult(_Answer):
    receipt_handle: str
    status: str


class SettleAnswer(_Answer):
    results: list[SettleResult]


class ProducerTxnStep(_Answer):
    """What begin, messages, acks, commit and abort answer (the fields present depend on the step)."""

    transactional_id: str
    sequence: int | None = None
    transaction: int | None = None
    state: str | None = None
    messages: int | None = None
    acks: int | None = None
    duplicate: bool | None = None
