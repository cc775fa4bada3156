"""The ``halfmq.wire`` structs the HTTP API sends for the protocols' typed results: Kafka-style transaction steps, numbered and half sends.

The domain answers with values (``producer_transactions.results``, ``idempotence.producer_ids``,
``half_messages.half_records``); these functions are the one place they become the answers whose shapes
``halfmq.wire`` writes once (the SDK decodes them, /openapi.json documents them, the front encodes them with msgspec).
Beside the domain, not in it (an import contract), like ``message_view``: whatever calls the domain for a front (the routes, the console) renders with them.
Fields keep the keys' order: the bytes are the ones the API has always sent. A retry's answer carries
``duplicate: true``; a transaction step's first answer has no ``duplicate`` at all (the struct's one default,
omitted), an end's always has it.
"""

from __future__ import annotations

from halfmq import wire
from halfmq.broker.half_messages.half_records import FinalMessage
from halfmq.broker.idempotence.producer_ids import ProducerIdResult, SentHalf, SentMessage
from halfmq.broker.producer_transactions.results import AcksResult, BeginResult, EndResult, InitResult, MessagesResult, TxnView
from halfmq.wire import HalfSendResult, SendResult, SendStatus


def producer_id_answer(r: ProducerIdResult) -> wire.ProducerIdResult:
    return wire.ProducerIdResult(producer_id=r.producer_id, epoch=r.epoch)


def init_answer(r: InitResult) -> wire.TxnInitResult:
    return wire.TxnInitResult(transactional_id=r.transactional_id, producer_id=r.producer_id, epoch=r.epoch,
                              transaction_timeout_ms=r.transaction_timeout_ms)


def begin_answer(r: BeginResult) -> wire.TxnBeginResult:
    return wire.TxnBeginResult(transactional_id=r.transactional_id, producer_id=r.producer_id, epoch=r.epoch, transaction=r.transaction,
                               state=r.state.value, sequence=r.sequence, duplicate=r.duplicate)


def messages_answer(r: MessagesResult) -> wire.TxnMessagesResult:
    return wire.TxnMessagesResult(transactional_id=r.transactional_id, sequence=r.sequence, messages=r.messages,
                                  results=[wire.TxnAddedResult(msg_id=m.msg_id, topic=m.topic, queue_id=m.queue_id) for m in r.results],
                                  duplicate=r.duplicate)


def acks_answer(r: AcksResult) -> wire.TxnAcksResult:
    return wire.TxnAcksResult(transactional_id=r.transactional_id, sequence=r.sequence, acks=r.acks, duplicate=r.duplicate)


def end_answer(r: EndResult) -> wire.TxnEndResult:
    return wire.TxnEndResult(
        transactional_id=r.transactional_id, producer_id=r.producer_id, epoch=r.epoch, transaction=r.transaction, state=r.state.value,
        messages=r.messages, acks=r.acks, aborted_by=r.aborted_by.value if r.aborted_by else None,
        results=[wire.TxnSendResult(msg_id=m.msg_id, topic=m.topic, queue_id=m.queue_id, queue_offset=m.queue_offset,
                                    commit_log_offset=m.commit_log_offset) for m in r.results],
        duplicate=r.duplicate)


def view_answer(v: TxnView) -> wire.TransactionalIdView:
    o = v.open
    open_txn = None if o is None else wire.OpenTransaction(transaction=o.transaction, age_seconds=o.age_seconds,
                                                           deadline_timestamp=o.deadline_timestamp, messages=o.messages, acks=o.acks)
    return wire.TransactionalIdView(transactional_id=v.transactional_id, producer_id=v.producer_id, epoch=v.epoch, state=v.state.value,
                                    transaction_timeout_ms=v.transaction_timeout_ms, transaction=v.transaction, open=open_txn,
                                    aborted_by=v.aborted_by.value if v.aborted_by else None)


def sent_answer(sent: list[SentMessage], status: SendStatus) -> list[SendResult]:
    """A numbered plain send's results (its first answer, or a repeat's from the window)."""
    return [SendResult(status=status, msg_id=m.msg_id, topic=m.topic, queue_id=m.queue_id, queue_offset=m.queue_offset,
                       commit_log_offset=m.commit_log_offset, deliver_at_ms=m.deliver_at_ms, recall_handle=m.recall_handle) for m in sent]


def half_answer(h: SentHalf, status: SendStatus, duplicate: bool = False) -> HalfSendResult:
    """A half send's answer (its first, or a numbered repeat's from the window: ``duplicate``)."""
    return HalfSendResult(status=status, transaction_id=h.transaction_id, msg_id=h.msg_id, commit_log_offset=h.commit_log_offset,
                          queue_offset=h.queue_offset, duplicate=duplicate)


def final_answer(final: FinalMessage | None) -> wire.FinalMessage | None:
    """Where a committed half message's transaction delivered it (a transaction's view); None until committed."""
    if final is None:
        return None
    return wire.FinalMessage(msg_id=final.msg_id, topic=final.topic, queue_id=final.queue_id, queue_offset=final.queue_offset,
                             commit_log_offset=final.commit_log_offset, deliver_at_ms=final.deliver_at_ms)
