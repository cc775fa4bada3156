"""What the coordinator answers each step of a producer transaction: typed values, not the HTTP answers.

The fronts turn them into what they send (``halfmq.broker.usecases.answers`` for HTTP). ``duplicate``
is True when a retried request got the answer its first attempt got. Frozen msgspec structs: a step builds
one per message it keeps, and a struct costs less than the dict it replaces (a frozen dataclass, ten times more).
"""

from __future__ import annotations

import msgspec

from .producer_state_machine import ProducerTxnState
from .txn_records import AbortedBy


class InitResult(msgspec.Struct, frozen=True):
    transactional_id: str
    producer_id: int
    epoch: int
    transaction_timeout_ms: int


class BeginResult(msgspec.Struct, frozen=True):
    transactional_id: str
    producer_id: int
    epoch: int
    transaction: int
    state: ProducerTxnState
    sequence: int
    duplicate: bool = False


class AddedMessage(msgspec.Struct, frozen=True):
    """A message kept for the commit: where it will go (its offsets are known once committed)."""

    msg_id: str
    topic: str
    queue_id: int


class MessagesResult(msgspec.Struct, frozen=True):
    transactional_id: str
    sequence: int
    messages: int  # held by the transaction so far
    results: tuple[AddedMessage, ...]
    duplicate: bool = False


class AcksResult(msgspec.Struct, frozen=True):
    transactional_id: str
    sequence: int
    acks: int  # held by the transaction so far
    duplicate: bool = False


StepResult = BeginResult | MessagesResult | AcksResult


class CommittedMessage(msgspec.Struct, frozen=True):
    msg_id: str
    topic: str
    queue_id: int
    queue_offset: int
    commit_log_offset: int


class EndResult(msgspec.Struct, frozen=True):
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


class OpenTxn(msgspec.Struct, frozen=True):
    transaction: int
    age_seconds: float
    deadline_timestamp: int
    messages: int
    acks: int


class TxnView(msgspec.Struct, frozen=True):
    """What an operator sees of one transactional id."""

    transactional_id: str
    producer_id: int
    epoch: int
    state: ProducerTxnState
    transaction_timeout_ms: int
    transaction: int
    open: OpenTxn | None
    aborted_by: AbortedBy | None
