"""What the coordinator answers each step of a producer transaction: typed values, not the HTTP answers.

The fronts turn them into what they send (``halfmq.broker.api.producer_answers`` for HTTP). ``duplicate``
is True when a retried request got the answer its first attempt got.
"""

from __future__ import annotations

from dataclasses import dataclass

from .producer_state_machine import ProducerTxnState
from .txn_records import AbortedBy


@dataclass(frozen=True, slots=True)
class InitResult:
    transactional_id: str
    producer_id: int
    epoch: int
    transaction_timeout_ms: int


@dataclass(frozen=True, slots=True)
class BeginResult:
    transactional_id: str
    producer_id: int
    epoch: int
    transaction: int
    state: ProducerTxnState
    sequence: int
    duplicate: bool = False


@dataclass(frozen=True, slots=True)
class AddedMessage:
    """A message kept for the commit: where it will go (its offsets are known once committed)."""

    msg_id: str
    topic: str
    queue_id: int


@dataclass(frozen=True, slots=True)
class MessagesResult:
    transactional_id: str
    sequence: int
    messages: int  # held by the transaction so far
    results: tuple[AddedMessage, ...]
    duplicate: bool = False


@dataclass(frozen=True, slots=True)
class AcksResult:
    transactional_id: str
    sequence: int
    acks: int  # held by the transaction so far
    duplicate: bool = False


StepResult = BeginResult | MessagesResult | AcksResult


@dataclass(frozen=True, slots=True)
class CommittedMessage:
    msg_id: str
    topic: str
    queue_id: int
    queue_offset: int
    commit_log_offset: int


@dataclass(frozen=True, slots=True)
class EndResult:
    """How a transaction ended (commit or abort), the same for every repeat of its end."""

    transactional_id: str
    producer_id: int
    epoch: int
    transaction: int
    state: ProducerTxnState
    messages: int
    acks: int
    aborted_by: AbortedBy | None
    results: tuple[CommittedMessage, ...]  # the committed messages; empty for an abort, and after a restart
    duplicate: bool = False


@dataclass(frozen=True, slots=True)
class OpenTxn:
    transaction: int
    age_seconds: float
    deadline_timestamp: int
    messages: int
    acks: int


@dataclass(frozen=True, slots=True)
class TxnView:
    """What an operator sees of one transactional id."""

    transactional_id: str
    producer_id: int
    epoch: int
    state: ProducerTxnState
    transaction_timeout_ms: int
    transaction: int
    open: OpenTxn | None
    aborted_by: AbortedBy | None
