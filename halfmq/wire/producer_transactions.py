"""Producer transactions (Kafka semantics, DESIGN section 11): ids, the steps' answers, a transactional id's view."""

from __future__ import annotations

from typing import Annotated

from msgspec import UNSET, Meta, UnsetType

from halfmq.wire.base import MAX_BATCH, NonNegative, _Request, _Wire
from halfmq.wire.messages import Handles, OutgoingMessage


class TxnMessage(OutgoingMessage, kw_only=True, omit_defaults=True):
    """A message inside a producer transaction: each names its own topic."""

    topic: str


class InitProducer(_Request, omit_defaults=True):
    """POST /v1/transactional-ids/{id}/init: the transaction timeout to keep (None: the broker's)."""

    transaction_timeout_ms: int | None = None


class NewProducerId(_Request):
    """POST /v1/producer-ids: an idempotent producer id without a transactional id; the body is ``{}`` (nothing to choose)."""


# Each step spells its producer fields out (no shared base), as the route documents them.
class BeginTxnRequest(_Request):
    producer_id: NonNegative
    epoch: NonNegative
    sequence: NonNegative


class TxnMessagesRequest(_Request):
    producer_id: NonNegative
    epoch: NonNegative
    sequence: NonNegative
    messages: Annotated[list[TxnMessage], Meta(min_length=1, max_length=MAX_BATCH)]


class TxnAcksRequest(_Request):
    producer_id: NonNegative
    epoch: NonNegative
    sequence: NonNegative
    receipt_handles: Handles


class EndTxnRequest(_Request):
    producer_id: NonNegative
    epoch: NonNegative


class ProducerIdResult(_Wire):
    """POST /v1/producer-ids: an idempotent producer id without a transactional id."""

    producer_id: int
    epoch: int


class TxnInitResult(_Wire):
    transactional_id: str
    producer_id: int
    epoch: int
    transaction_timeout_ms: int


class TxnBeginResult(_Wire, omit_defaults=True):  # the broker writes duplicate only when true (its one default)
    transactional_id: str
    producer_id: int
    epoch: int
    transaction: int
    state: str
    sequence: int
    duplicate: bool = False


class TxnSendResult(_Wire):
    """A message of a producer transaction: where it went; its offsets once the transaction committed."""

    msg_id: str
    topic: str
    queue_id: int
    queue_offset: int | None = None  # known once committed
    commit_log_offset: int | None = None


class TxnAddedResult(TxnSendResult):
    """A ``TxnSendResult`` as a messages step's answer writes it: no offsets yet, so no offset keys (the SDK reads None)."""

    queue_offset: int | None | UnsetType = UNSET  # type: ignore[assignment]
    commit_log_offset: int | None | UnsetType = UNSET  # type: ignore[assignment]


class TxnMessagesResult(_Wire, omit_defaults=True):  # the broker writes duplicate only when true (its one default)
    transactional_id: str
    sequence: int
    messages: int
    results: list[TxnSendResult]
    duplicate: bool = False


class TxnAcksResult(_Wire, omit_defaults=True):  # the broker writes duplicate only when true (its one default)
    transactional_id: str
    sequence: int
    acks: int
    duplicate: bool = False


class TxnEndResult(_Wire):
    """A producer transaction's commit or abort: its final state, how many messages and acks, where the messages went."""

    transactional_id: str
    producer_id: int
    epoch: int
    transaction: int
    state: str  # COMPLETE_COMMIT or COMPLETE_ABORT
    messages: int
    acks: int
    aborted_by: str | None = None
    results: list[TxnSendResult] = []
    duplicate: bool = False


class OpenTransaction(_Wire):
    transaction: int
    age_seconds: float
    deadline_timestamp: int
    messages: int
    acks: int


class TransactionalIdView(_Wire):
    transactional_id: str
    producer_id: int
    epoch: int
    state: str
    transaction_timeout_ms: int
    transaction: int
    open: OpenTransaction | None = None
    aborted_by: str | None = None


class TransactionalIdList(_Wire):
    count: int
    transactional_ids: list[TransactionalIdView]
