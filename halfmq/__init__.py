"""halfmq: RocketMQ-style transactional messages over HTTP.

The SDK's public face: ``from halfmq import Producer, TransactionProducer, Consumer, …``
(``Producer(url, transactional_id=…)`` for Kafka-style transactions, RocketMQ's half
messages with ``TransactionProducer``).
Names resolve on first use (PEP 562), so ``import halfmq`` costs nothing and
``from halfmq import AsyncProducer`` loads the client SDK only, never server code.
The broker, services, job and CLI are ``halfmq.broker``, ``halfmq.services``,
``halfmq.jobs`` and ``halfmq.cli`` (installed with the extras of the same names).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.2.0.dev0"  # the one version source: pyproject.toml reads it, `halfmq --version` prints it
"""The installed version (PEP 440); the one version source: pyproject.toml reads it, ``halfmq --version`` prints it."""

if TYPE_CHECKING:
    from halfmq.client import (
        UNIQ_KEY,
        AsyncConsumer,
        AsyncConsumerClient,
        AsyncProducer,
        AsyncSimpleConsumer,
        AsyncTransactionalProducer,
        AsyncTransactionListener,
        AsyncTransactionProducer,
        BrokerError,
        BrokerUnavailable,
        CheckApp,
        CheckRequest,
        CheckUrlRefused,
        Consumer,
        ConsumerClient,
        ConsumerGroupInfo,
        HalfSendResult,
        LocalTransactionState,
        Message,
        OffsetReadResponse,
        OutgoingMessage,
        Producer,
        ProducerFenced,
        SendResult,
        SendStatus,
        SettleResult,
        SettleStatus,
        SimpleConsumer,
        TopicInfo,
        TransactionAborted,
        TransactionalProducer,
        TransactionListener,
        TransactionProducer,
        TransactionSendResult,
        message_body_bytes,
        message_json,
    )

__all__ = [
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
    "TransactionAborted",
    "TransactionListener",
    "TransactionProducer",
    "TransactionSendResult",
    "TransactionalProducer",
    "__version__",
    "message_body_bytes",
    "message_json",
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        value = getattr(import_module("halfmq.client"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'halfmq' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
