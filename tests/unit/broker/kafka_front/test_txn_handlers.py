"""The Kafka front's transactional Produce: a batch of a transaction this node did not begin is to be aborted."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from kafka.errors import TransactionAbortableError

from halfmq.broker.kafka_front.errors import TransactionAbortable
from halfmq.broker.kafka_front.group_coordinator import GroupCoordinator
from halfmq.broker.kafka_front.record_batches import Record, decode_batches, encode_batch
from halfmq.broker.kafka_front.request_header import RequestHeader
from halfmq.broker.kafka_front.txn_handlers import TxnHandlers, TxnSteps
from halfmq.broker.security.access import ANONYMOUS


def test_a_batch_of_a_transaction_begun_on_a_previous_leader_is_transaction_abortable_and_adds_nothing() -> None:
    """A set's new leader holds no step of a transaction begun on the old one: TRANSACTION_ABORTABLE, which kafka-python
    and librdkafka answer with an abort (INVALID_TXN_STATE is fatal to kafka-python)."""
    added: list[object] = []
    runtime = SimpleNamespace(usecases=SimpleNamespace(producer_transactions=SimpleNamespace(
        stepping=lambda *_: None, add_messages=lambda _actor, body: added.append(body))))
    txns = TxnHandlers(lambda: runtime, lambda: ANONYMOUS, TxnSteps(10), GroupCoordinator(10, 10))
    batches = decode_batches(encode_batch([Record(0, 1, None, b"v", ())], producer_id=7, producer_epoch=0, base_sequence=3,
                                          transactional=True))
    header = RequestHeader(api_key=0, api_version=9, correlation_id=1, client_id="t", flexible=True, body_offset=0)
    with pytest.raises(TransactionAbortable) as refused:
        txns.produce("tx-1", "T", 0, batches, header)
    assert refused.value.kafka_error is TransactionAbortableError and added == []
