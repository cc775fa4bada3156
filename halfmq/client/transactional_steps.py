"""A transactional producer's bookkeeping, free of I/O: which request comes next and with which numbers.

The sync and asyncio producers (``transactional_producer``) are small drivers
around this, so they cannot disagree about sequence numbers or state.

Numbering is what makes the SDK's own retries safe: a request keeps its
sequence number until the broker has answered it, so a retry after a timeout
or a reset is recognised by the broker and answered from what it stored. A
request that failed for good is kept and sent again, with the same number,
before anything else: the broker either stored it (and says so) or not.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

import msgspec

from halfmq.errors import InvalidTxnState, ProducerFenced
from halfmq.wire import (
    Message,
    OutgoingMessage,
    TxnAcksResult,
    TxnBeginResult,
    TxnEndResult,
    TxnInitResult,
    TxnMessage,
    TxnMessagesResult,
    TxnSendResult,
)

from . import endpoints
from .endpoints import Call

__all__ = ["TransactionalSteps"]

T = TypeVar("T")


def as_txn_message(topic: str, message: OutgoingMessage) -> TxnMessage:
    return TxnMessage(topic=topic, **msgspec.structs.asdict(message))


def receipt_of(receipt: Message | str) -> str:
    handle = receipt if isinstance(receipt, str) else receipt.receipt_handle
    if not handle:
        raise ValueError("a message without a receipt_handle (not from receive) cannot be acked in a transaction")
    return handle


class TransactionalSteps:
    def __init__(self, transactional_id: str, timeout_ms: int | None, batch_size: int) -> None:
        if not 1 <= batch_size <= 1000:
            raise ValueError(f"batch_size must be 1..1000, not {batch_size}")
        self.transactional_id = transactional_id
        self.timeout_ms = timeout_ms
        self.batch_size = batch_size
        self.producer_id: int | None = None
        self.epoch: int | None = None
        self.fenced: ProducerFenced | None = None
        self.in_transaction = False
        self._sequence = 0
        self._buffer: list[TxnMessage] = []
        self._unanswered: Call[Any] | None = None  # sent, no answer: it goes again, same number, before anything else
        self.results: list[TxnSendResult] = []

    # --- guards -----------------------------------------------------------------
    def _ids(self) -> tuple[int, int]:
        if self.fenced is not None:
            raise ProducerFenced(f"this producer was fenced earlier: {self.fenced.detail}")
        if self.producer_id is None or self.epoch is None:
            raise InvalidTxnState("call init_transactions() first")
        return self.producer_id, self.epoch

    def _open(self) -> tuple[int, int]:
        ids = self._ids()
        if not self.in_transaction:
            raise InvalidTxnState("call begin_transaction() first")
        return ids

    def failed(self, exc: BaseException) -> None:
        """A request failed: remember a fencing for good (it is fatal)."""
        if isinstance(exc, ProducerFenced):
            self.fenced = exc

    # --- calls ------------------------------------------------------------------
    def init(self) -> Call[TxnInitResult]:
        if self.fenced is not None:
            raise ProducerFenced(f"this producer was fenced earlier: {self.fenced.detail}")
        return endpoints.txn_init(self.transactional_id, self.timeout_ms)

    def initialised(self, result: TxnInitResult) -> None:
        self.producer_id, self.epoch = result.producer_id, result.epoch
        self.in_transaction, self._buffer, self._unanswered, self.results = False, [], None, []

    def begin(self) -> Call[TxnBeginResult]:
        producer_id, epoch = self._ids()
        if self.in_transaction:
            raise InvalidTxnState("a transaction is already open: commit or abort it first")
        return endpoints.txn_begin(self.transactional_id, producer_id, epoch)

    def begun(self) -> None:
        self.in_transaction, self._sequence, self._buffer, self._unanswered, self.results = True, 0, [], None, []

    def add(self, topic: str, message: OutgoingMessage) -> bool:
        """Buffer a message; True when the buffer is full and should be flushed."""
        self._open()
        self._buffer.append(as_txn_message(topic, message))
        return len(self._buffer) >= self.batch_size

    def next_pending(self) -> Call[Any] | None:
        """The request to send next while flushing: one left unanswered, else the buffer; None when all is sent."""
        producer_id, epoch = self._open()
        if self._unanswered is None and self._buffer:
            batch, self._buffer = self._buffer[: self.batch_size], self._buffer[self.batch_size :]
            self._unanswered = endpoints.txn_messages(self.transactional_id, producer_id, epoch, self._sequence + 1, batch)
        return self._unanswered

    def acks(self, receipts: Sequence[Message | str]) -> Call[TxnAcksResult]:
        producer_id, epoch = self._open()
        handles = [receipt_of(r) for r in receipts]
        call = endpoints.txn_acks(self.transactional_id, producer_id, epoch, self._sequence + 1, handles)
        self._unanswered = call
        return call

    def answered(self, result: object) -> None:
        self._sequence += 1
        self._unanswered = None
        if isinstance(result, TxnMessagesResult):
            self.results.extend(result.results)

    def commit(self) -> Call[TxnEndResult]:
        producer_id, epoch = self._open()
        return endpoints.txn_commit(self.transactional_id, producer_id, epoch)

    def abort(self) -> Call[TxnEndResult]:
        producer_id, epoch = self._ids()
        return endpoints.txn_abort(self.transactional_id, producer_id, epoch)

    def ended(self) -> None:
        self.in_transaction, self._buffer, self._unanswered = False, [], None
