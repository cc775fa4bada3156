"""RocketMQ half messages: a half send's answer, a check-back, a transaction's view, the batches."""

from __future__ import annotations

from typing import Annotated, Any

from msgspec import UNSET, UnsetType

from halfmq.wire.base import SendStatus, TransactionState, _Wire, one_of
from halfmq.wire.messages import Message


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
