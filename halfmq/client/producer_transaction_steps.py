"""A transactional producer's bookkeeping, free of I/O: which request comes next and with which numbers.

The producer (``producer.AsyncProducer`` with a ``transactional_id``) is a small
driver around this: the rules are tested without a broker, and the driver only does I/O.

Numbering is what makes the SDK's own retries safe: a request keeps its
sequence number until the broker has answered it, so a retry after a timeout
or a reset is recognised by the broker and answered from what it stored. A
request that failed for good is kept and sent again, with the same number,
before anything else: the broker either stored it (and says so) or not.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

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



def receipt_of(receipt: Message | str) -> str:
    """The receipt handle to ack: a received message's, or one given as it is (refused when empty, before any I/O)."""
    handle = receipt if isinstance(receipt, str) else receipt.receipt_handle
    if not handle:
        raise ValueError("a message without a receipt_handle (not from receive) cannot be acked in a transaction")
    return handle


class TransactionalSteps:
    """One transactional producer's state: its ids, whether a transaction is open, what is buffered or unanswered.

    Each ``x()`` returns the request to send; the driver reports its answer back (``initialised``,
    ``answered`` …), or its failure (``failed``).
    """

    def __init__(self, transactional_id: str, timeout_ms: int | None, batch_size: int) -> None:
        """``batch_size``: messages per request when the buffer is flushed (1..1000, the broker's limit)."""
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
        """Register the id (a fenced producer may not: a newer instance owns it)."""
        if self.fenced is not None:
            raise ProducerFenced(f"this producer was fenced earlier: {self.fenced.detail}")
        return endpoints.txn_init(self.transactional_id, self.timeout_ms)

    def initialised(self, result: TxnInitResult) -> None:
        """A new epoch: whatever this instance had open was aborted by the broker, so nothing is kept."""
        self.producer_id, self.epoch = result.producer_id, result.epoch
        self.in_transaction, self._buffer, self._unanswered, self.results = False, [], None, []

    def begin(self) -> Call[TxnBeginResult]:
        """Open a transaction; one at a time per producer, as in Kafka."""
        producer_id, epoch = self._ids()
        if self.in_transaction:
            raise InvalidTxnState("a transaction is already open: commit or abort it first")
        return endpoints.txn_begin(self.transactional_id, producer_id, epoch)

    def begun(self) -> None:
        """A transaction's sequence numbers start again at 1."""
        self.in_transaction, self._sequence, self._buffer, self._unanswered, self.results = True, 0, [], None, []

    def add(self, topic: str, message: OutgoingMessage) -> bool:
        """Buffer a message; True when the buffer is full and should be flushed."""
        self._open()
        self._buffer.append(TxnMessage(topic=topic, **msgspec.structs.asdict(message)))  # a transaction's messages name their topics
        return len(self._buffer) >= self.batch_size

    def next_pending(self) -> Call[Any] | None:
        """The request to send next while flushing: one left unanswered, else the buffer; None when all is sent."""
        producer_id, epoch = self._open()
        if self._unanswered is None and self._buffer:
            batch, self._buffer = self._buffer[: self.batch_size], self._buffer[self.batch_size :]
            self._unanswered = endpoints.txn_messages(self.transactional_id, producer_id, epoch, self._sequence + 1, batch)
        return self._unanswered

    def acks(self, receipts: Sequence[Message | str]) -> Call[TxnAcksResult]:
        """Acks numbered like sends, so a retried ack request is recognised too."""
        producer_id, epoch = self._open()
        handles = [receipt_of(r) for r in receipts]
        call = endpoints.txn_acks(self.transactional_id, producer_id, epoch, self._sequence + 1, handles)
        self._unanswered = call
        return call

    def answered(self, result: object) -> None:
        """The broker has the request: its number is used up, and a send's results are kept for ``flush``."""
        self._sequence += 1
        self._unanswered = None
        if isinstance(result, TxnMessagesResult):
            self.results.extend(result.results)

    def commit(self) -> Call[TxnEndResult]:
        """Only after every buffered message is answered (the driver flushes first)."""
        producer_id, epoch = self._open()
        return endpoints.txn_commit(self.transactional_id, producer_id, epoch)

    def abort(self) -> Call[TxnEndResult]:
        """Allowed without an open transaction: aborting is how a caller recovers from ``TransactionAborted``."""
        producer_id, epoch = self._ids()
        return endpoints.txn_abort(self.transactional_id, producer_id, epoch)

    def ended(self) -> None:
        """The buffer is dropped: an aborted transaction's unsent messages must never go out."""
        self.in_transaction, self._buffer, self._unanswered = False, [], None
