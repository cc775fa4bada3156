"""One transactional id's state, the limits of a transaction, and what a transaction needs of consumption."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from halfmq.broker.delivery.receipt_handle import ReceiptHandle
from halfmq.broker.idempotence.producer_state import ProducerState
from halfmq.broker.store.message_store import PutItem
from halfmq.broker.store.state_records import ProducerRecord

from .producer_state_machine import ProducerTxnEvent, ProducerTxnState
from .results import EndResult, StepResult
from .txn_records import AbortedBy


class HeldAckLedger(Protocol):
    """The acks of open transactions (delivery.held_acks.HeldAcks): held while open, settled or released at the end."""

    def check_held(self, receipts: list[ReceiptHandle]) -> None: ...
    def hold(self, receipts: list[ReceiptHandle]) -> None: ...
    def settle_held(self, receipts: list[ReceiptHandle]) -> None: ...
    def release_held(self, receipts: list[ReceiptHandle]) -> None: ...


class AckLedger(Protocol):
    """What transactions need of consumption (DeliveryService): the open ones' held acks, what the replay of the
    log (replay.py) gives back to it (the acks it settled, and the receipt key the log names), and the consumed
    offsets a commit moves (``restore_reset``: a group's committed offset set, as an offsets-reset record's)."""

    @property
    def held_acks(self) -> HeldAckLedger: ...
    def restore_acked(self, group: str, topic: str, queue_id: int, offset: int) -> None: ...
    def restore_reset(self, group: str, topic: str, queue_id: int, offset: int) -> None: ...
    def forget(self, *, group: str | None = None, topic: str | None = None) -> None: ...
    @property
    def logged_receipt_key(self) -> bytes | None: ...
    def use_receipt_key(self, key: bytes) -> None: ...


class ProducerRegistrations(Protocol):
    """What the replay and the state snapshot need of the producers registered for check-backs (half_messages.ProducerRegistry)."""

    def replay(self, record: ProducerRecord) -> None: ...
    def registrations(self) -> list[ProducerRecord]: ...


@dataclass(frozen=True)
class TxnLimits:
    max_messages: int = 10_000
    max_bytes: int = 16 * 1024 * 1024
    max_acks: int = 10_000
    max_open_bytes: int = 256 * 1024 * 1024  # held by every open transaction together (held_bytes.py)
    max_open_bytes_per_principal: int = 64 * 1024 * 1024


@dataclass(kw_only=True)
class ProducerTxn(ProducerState):
    """One transactional id: its producer (id, epoch, owner, sends) and its current (or last) transaction."""

    timeout_ms: int
    state: ProducerTxnState = ProducerTxnState.EMPTY
    begun_ms: int = 0
    begun_at: int | None = None  # the commit-log offset of the open transaction's begin record (retention's pin)
    ended_ms: int | None = None
    aborted_by: AbortedBy | None = None
    items: list[PutItem] = field(default_factory=list)
    size: int = 0
    acks: list[ReceiptHandle] = field(default_factory=list)
    offsets: dict[tuple[str, str, int], int] = field(default_factory=dict)
    """Consumed offsets committed inside the transaction (Kafka's TxnOffsetCommit): (group, topic, queue) -> the
    group's next offset, applied at the commit; they count against ``max_acks`` with the acks."""
    ack_count: int = 0
    message_count: int = 0
    last_sequence: int = -1
    last_event: ProducerTxnEvent | None = None
    last_answer: StepResult | None = None
    end_answer: EndResult | None = None
