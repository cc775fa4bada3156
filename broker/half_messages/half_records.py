"""What the half-message index holds of one transaction, and what ending it answers: typed values, no HTTP."""

from __future__ import annotations

from dataclasses import dataclass, field

import msgspec

from halfmq.broker.store.message_store import PutResult
from halfmq.broker.store.record import StoredMessage
from halfmq.broker.timers.routing import visible_place
from halfmq.errors import TransactionNotFound
from halfmq.wire import TransactionState

from . import record_names as names


class FinalMessage(msgspec.Struct, frozen=True):
    """Where a committed transaction's message was delivered: its real topic, queue and offsets."""

    msg_id: str
    topic: str
    queue_id: int
    queue_offset: int  # -1 for a timed message until it is released
    commit_log_offset: int
    deliver_at_ms: int | None = None  # a timed message's due time

    @classmethod
    def of(cls, msg_id: str, stored: StoredMessage | PutResult) -> FinalMessage:
        """From the final message's stored record (or the store's result of writing it); a timer names its real place."""
        topic, queue_id, queue_offset, due = visible_place(stored.topic, stored.queue_id, stored.queue_offset, stored.properties)
        return cls(msg_id, topic, queue_id, queue_offset, stored.commit_log_offset, due)


@dataclass
class Tx:
    transaction_id: str
    producer_group: str
    state: TransactionState
    half_clog_offset: int
    half_offset: int
    born_ms: int
    msg_id: str
    op_offset_at_creation: int
    due_at: float = 0.0
    check_times: int = 0
    last_answer: str | None = None
    last_check_ms: int | None = None
    end_offset: int = 0
    resolved_ms: int | None = None
    final: FinalMessage | None = None


@dataclass(frozen=True)
class EndOutcome:
    tx: Tx
    duplicate: bool
    half: StoredMessage | None = None  # the half message when this end read it (saves the view a second read)


@dataclass
class TxStats:
    commits: int = 0
    rollbacks: int = 0
    discards: int = 0
    checks: dict[str, int] = field(default_factory=dict)


def not_found(transaction_id: str) -> TransactionNotFound:
    """The one answer for a transaction the caller may not see and for none at all: the same code and words."""
    return TransactionNotFound(f"no transaction {transaction_id!r} (unknown, or resolved longer ago than the retention)")


def part_label(index: int, count: int) -> str:
    """The HALF_PART of the ``index``-th (1-based) of ``count`` halves that one local transaction decides."""
    return f"{index}/{count}"


def part_of(properties: dict[str, str]) -> tuple[int, int]:
    """(index, count) of a half: (1, 1) for a lone half, which carries no HALF_PART."""
    label = properties.get(names.HALF_PART)
    if label is None:
        return 1, 1
    index, _, count = label.partition("/")
    return int(index), int(count)


def tags_of(msg: StoredMessage | None) -> str | None:
    return msg.properties.get(names.TAGS) if msg is not None else None
