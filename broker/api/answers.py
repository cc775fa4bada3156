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


class ItemProblem(_Answer):
    """One batch item's failure: the problem+json the single route would have answered (stable ``code``)."""

    problem: dict


class HalfBatchAnswer(_Answer):
    """Per item, in request order: its half send's answer, or ``{"problem": ...}``."""

    results: list[HalfSendAnswer | ItemProblem]


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


class TransactionList(_Answer):
    state: str
    count: int
    transactions: list[TransactionView]


class QueueRange(_Answer):
    queue_id: int
    min_offset: int
    max_offset: int


class TopicView(_Answer):
    name: str
    queues: list[QueueRange]


class TopicList(_Answer):
    topics: list[TopicView]


class MessagePage(_Answer):
    messages: list[MessageView]
    next_offset: int
    damaged_offsets: list[int] | None = None


class QueueLagView(_Answer):
    queue_id: int
    committed_offset: int
    max_offset: int
    lag: int
    in_flight: int


class TopicLag(_Answer):
    topic: str
    queues: list[QueueLagView]


class GroupLag(_Answer):
    group: str
    topics: list[TopicLag]


class GroupSummary(_Answer):
    group: str
    topics: list[str]
    lag: int
    in_flight: int
    retrying: int
    dlq_depth: int


class GroupList(_Answer):
    count: int
    groups: list[GroupSummary]


class DeadLetters(_Answer):
    group: str
    depth: int
    messages: list[MessageView]


class DlqResent(_Answer):
    group: str
    dlq_offset: int
    msg_id: str
    topic: str
    queue_id: int
    queue_offset: int
    commit_log_offset: int


class ProducerEntry(_Answer):
    client_id: str
    check_url: str | None = None


class ProducerGroup(_Answer):
    producer_group: str
    producers: list[ProducerEntry]


class ProducerList(_Answer):
    groups: list[ProducerGroup]


class HeartbeatAnswer(_Answer):
    producer_group: str
    client_id: str
    expires_in: float


class TransactionalIdView(_Answer):
    transactional_id: str
    producer_id: int
    epoch: int
    state: str
    transaction_timeout_ms: int
    transaction: int
    open: dict | None = None
    aborted_by: str | None = None


class TransactionalIdList(_Answer):
    count: int
    transactional_ids: list[TransactionalIdView]


class InitAnswer(_Answer):
    transactional_id: str
    producer_id: int
    epoch: int
    transaction_timeout_ms: int


class ProducerIdAnswer(_Answer):
    producer_id: int
    epoch: int


class Health(_Answer):
    status: str
    commit_log_end_offset: int
    flushed_offset: int


class EndBatchAnswer(_Answer):
    """Per item, in request order: the transaction's view after its end, or ``{"problem": ...}``."""

    results: list[TransactionView | ItemProblem]
