"""Python SDK for the halfmq broker (DESIGN section 7).

Services talk to the broker only through this package, over HTTP, exactly as
a stranger would; the wire models and error types are re-exported here so
they need nothing else from ``broker``. Names load on first use (PEP 562), so
``from halfmq.client import Producer`` loads the producer and not the
consumers or the check app. ``TransactionalProducer`` and
``AsyncTransactionalProducer`` are deprecated names (one release) of
``Producer``/``AsyncProducer`` with a ``transactional_id``.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from halfmq.client.async_transaction_producer import AsyncTransactionProducer
    from halfmq.client.check_app import CheckApp
    from halfmq.client.consumer import AsyncConsumer, Consumer
    from halfmq.client.consumer_client import AsyncConsumerClient, ConsumerClient
    from halfmq.client.listener import AsyncTransactionListener, LocalTransactionState, TransactionListener
    from halfmq.client.messages import UNIQ_KEY, message_body_bytes, message_json
    from halfmq.client.producer import AsyncProducer, Producer
    from halfmq.client.send_options import SendOptions
    from halfmq.client.simple_consumer import AsyncSimpleConsumer, SimpleConsumer
    from halfmq.client.transaction_producer import TransactionProducer
    from halfmq.client.transaction_steps import TransactionSendResult
    from halfmq.client.transactional_producer import AsyncTransactionalProducer, TransactionalProducer
    from halfmq.errors import BrokerError, BrokerUnavailable, CheckUrlRefused, ProducerFenced, TransactionAborted
    from halfmq.wire import (
        CheckRequest,
        ConsumerGroupInfo,
        HalfSendResult,
        Message,
        OffsetReadResponse,
        OutgoingMessage,
        SendResult,
        SendStatus,
        SettleResult,
        SettleStatus,
        TopicInfo,
        TxnEndResult,
        TxnSendResult,
    )

_HOMES = {
    "BrokerError": "halfmq.errors",
    "BrokerUnavailable": "halfmq.errors",
    "CheckUrlRefused": "halfmq.errors",
    "ProducerFenced": "halfmq.errors",
    "TransactionAborted": "halfmq.errors",
    "TxnEndResult": "halfmq.wire",
    "TxnSendResult": "halfmq.wire",
    "AsyncTransactionalProducer": "halfmq.client.transactional_producer",
    "TransactionalProducer": "halfmq.client.transactional_producer",
    "CheckRequest": "halfmq.wire",
    "ConsumerGroupInfo": "halfmq.wire",
    "HalfSendResult": "halfmq.wire",
    "Message": "halfmq.wire",
    "OffsetReadResponse": "halfmq.wire",
    "OutgoingMessage": "halfmq.wire",
    "SendResult": "halfmq.wire",
    "SendStatus": "halfmq.wire",
    "SettleResult": "halfmq.wire",
    "SettleStatus": "halfmq.wire",
    "TopicInfo": "halfmq.wire",
    "AsyncConsumer": "halfmq.client.consumer",
    "CheckApp": "halfmq.client.check_app",
    "Consumer": "halfmq.client.consumer",
    "AsyncConsumerClient": "halfmq.client.consumer_client",
    "ConsumerClient": "halfmq.client.consumer_client",
    "UNIQ_KEY": "halfmq.client.messages",
    "message_body_bytes": "halfmq.client.messages",
    "message_json": "halfmq.client.messages",
    "AsyncProducer": "halfmq.client.producer",
    "Producer": "halfmq.client.producer",
    "AsyncTransactionListener": "halfmq.client.listener",
    "LocalTransactionState": "halfmq.client.listener",
    "TransactionListener": "halfmq.client.listener",
    "TransactionSendResult": "halfmq.client.transaction_steps",
    "SimpleConsumer": "halfmq.client.simple_consumer",
    "AsyncSimpleConsumer": "halfmq.client.simple_consumer",
    "AsyncTransactionProducer": "halfmq.client.async_transaction_producer",
    "SendOptions": "halfmq.client.send_options",
    "TransactionProducer": "halfmq.client.transaction_producer",
}

__all__ = [
    "SendOptions",
    "UNIQ_KEY",
    "AsyncConsumer",
    "AsyncConsumerClient",
    "AsyncProducer",
    "AsyncSimpleConsumer",
    "AsyncTransactionListener",
    "AsyncTransactionProducer",
    "AsyncTransactionalProducer",
    "BrokerError",
    "BrokerUnavailable",
    "CheckApp",
    "CheckRequest",
    "CheckUrlRefused",
    "Consumer",
    "ConsumerClient",
    "ConsumerGroupInfo",
    "HalfSendResult",
    "LocalTransactionState",
    "Message",
    "OffsetReadResponse",
    "OutgoingMessage",
    "Producer",
    "ProducerFenced",
    "SendResult",
    "SendStatus",
    "SettleResult",
    "SettleStatus",
    "SimpleConsumer",
    "TopicInfo",
    "TransactionListener",
    "TransactionAborted",
    "TransactionProducer",
    "TransactionalProducer",
    "TransactionSendResult",
    "TxnEndResult",
    "TxnSendResult",
    "message_body_bytes",
    "message_json",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'halfmq.client' has no attribute {name!r}")
    value = getattr(import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
