"""RocketMQ half messages: a half send's answer, a check-back, a transaction's view, the batches."""

from __future__ import annotations

from typing import Annotated, Any

from msgspec import UNSET, Meta, UnsetType

from halfmq.wire.base import (
    MAX_BATCH,
    MAX_HALF_COMPANIONS,
    EndState,
    GroupName,
    NonNegative,
    SendStatus,
    TransactionState,
    _Request,
    _Wire,
    one_of,
)
from halfmq.wire.messages import Message, OutgoingMessage
from halfmq.wire.producer_transactions import TxnMessage


class HalfSendRequest(_Request, omit_defaults=True):
    """POST /v1/transactions: a half message, invisible until its producer group's local transaction ends.

    The three numbers make it idempotent, as a ``SendRequest``'s. ``also`` is halfmq's extension (not RocketMQ's):
    more messages decided by the same local transaction, one half each, committed (each through its own delay) or
    rolled back with ``message`` as one write group.
    """

    producer_group: GroupName
    topic: str
    message: OutgoingMessage
    producer_id: NonNegative | None = None
    epoch: NonNegative | None = None
    sequence: NonNegative | None = None
    also: Annotated[list[TxnMessage], Meta(max_length=MAX_HALF_COMPANIONS)] = []


class EndRequest(_Request):
    """POST /v1/transactions/{transaction_id}/end: commit, roll back, or say unknown (a check-back's answer)."""

    producer_group: GroupName
    state: EndState
    from_check: bool = False


class EndItem(EndRequest, kw_only=True):
    """One end of a batch end: the single end's body plus the transaction it ends (the single route's path)."""

    transaction_id: GroupName


class HalfBatchRequest(_Request):
    """POST /v1/transaction-batches/half: up to MAX_BATCH half sends, each answered on its own."""

    items: Annotated[list[HalfSendRequest], Meta(min_length=1, max_length=MAX_BATCH)]


class EndBatchRequest(_Request):
    """POST /v1/transaction-batches/end: up to MAX_BATCH ends, each answered on its own."""

    items: Annotated[list[EndItem], Meta(min_length=1, max_length=MAX_BATCH)]


class Heartbeat(_Request):
    """POST /v1/producers/heartbeat: a producer of a group is alive, and where to ask it about its transactions."""

    producer_group: GroupName
    client_id: GroupName
    check_url: str | None = None


class HalfSendResult(_Wire, omit_defaults=True):  # the broker writes duplicate only when true (its one default)
    """A half message stored (invisible until its transaction commits): the transaction's id and where it is."""

    status: SendStatus
    transaction_id: str
    msg_id: str
    commit_log_offset: int
    queue_offset: int
    duplicate: bool = False


class CheckRequest(_Wire):
    """A check-back: the broker asks the producer whether a pending transaction committed (the half message included)."""

    transaction_id: str
    producer_group: str
    check_times: int
    message: Message


class ItemProblem(_Wire):
    """One batch item's failure: the problem+json the single route would have answered (stable ``code``)."""

    problem: dict[str, Any]


class FinalMessage(_Wire, omit_defaults=True):  # deliver_at_ms only on a timed message
    """Where a committed half message's transaction delivered it (a timed one: queue_offset -1 until it is due)."""

    msg_id: str
    topic: str
    queue_id: int
    queue_offset: int
    commit_log_offset: int
    deliver_at_ms: int | None = None


class TransactionView(_Wire, kw_only=True):
    transaction_id: str
    producer_group: str
    state: TransactionState
    check_times: int
    born_timestamp: int
    age_seconds: float
    last_answer: str | None = None
    last_check_timestamp: int | None = None
    next_check_timestamp: int | None = None
    resolved_timestamp: int | None = None
    final: FinalMessage | None = None
    message: Message
    duplicate: bool | UnsetType = UNSET  # an end's answer says it (true on a repeat); a view does not


class TransactionList(_Wire):
    state: TransactionState
    count: int
    transactions: list[TransactionView]


class HalfBatchResponse(_Wire):
    """Per item, in request order: its half send's answer, or ``{"problem": ...}``."""

    results: list[Annotated[dict[str, Any], one_of(HalfSendResult, ItemProblem)]]


class EndBatchResponse(_Wire):
    """Per item, in request order: the transaction's view after its end, or ``{"problem": ...}``."""

    results: list[Annotated[dict[str, Any], one_of(TransactionView, ItemProblem)]]
